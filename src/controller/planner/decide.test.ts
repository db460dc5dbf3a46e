import { describe, expect, test } from 'bun:test';
import { decideGroup, type StageState } from './decide.ts';

const stage = (count: number, pressure: number, movable: number[] = [count * 10], min = 1): StageState => ({
  count,
  pressure,
  movable,
  min,
});

describe('load mode', () => {
  test('a saturated stage takes the least loaded instance of one that keeps its headroom', () => {
    const d = decideGroup(0, 5, { mode: 'load', margin: 0.2, prefill: stage(3, 0.2, [102, 100]), decode: stage(1, 1.6) });
    expect(d.code).toBe('move');
    expect(d.move).toEqual({ id: 102, from: 'prefill', to: 'decode' });
    expect(d.reason).toBe(
      'decode saturated and prefill keeps headroom (0.30 after giving an instance): moving instance 102 prefill → decode (prefill 0.20 on 3, decode 1.60 on 1)',
    );
    expect(d.pressure).toEqual({ prefill: 0.2, decode: 1.6 });
  });

  test('no stage saturated: nothing moves', () => {
    const d = decideGroup(0, 5, { mode: 'load', margin: 0.2, prefill: stage(2, 0.99), decode: stage(2, 0.1) });
    expect(d).toMatchObject({ code: 'balanced', move: undefined, reason: 'no stage saturated (prefill 0.99 on 2, decode 0.10 on 2)' });
  });

  test('the donor must keep 1 − margin of headroom after giving an instance', () => {
    // 0.45 on 2 is 0.9 on 1: above 0.8.
    const d = decideGroup(0, 5, { mode: 'load', margin: 0.2, prefill: stage(2, 1.3), decode: stage(2, 0.45) });
    expect(d.code).toBe('donor_busy');
    expect(d.reason).toContain('decode would be at 0.90 after giving an instance, above 0.80 (1 − margin)');
    expect(decideGroup(0, 5, { mode: 'load', margin: 0.2, prefill: stage(2, 1.3), decode: stage(2, 0.4) }).code).toBe('move');
  });

  test('the minimum of each role per group holds', () => {
    const d = decideGroup(0, 5, { mode: 'load', margin: 0.2, prefill: stage(2, 0.05, [1], 2), decode: stage(2, 3) });
    expect(d.code).toBe('at_minimum');
    expect(d.reason).toContain('prefill is at its minimum of 2 in the group');
    // One instance is never given away from a stage of one (its pressure after would be infinite).
    expect(decideGroup(0, 5, { mode: 'load', margin: 0.2, prefill: stage(1, 0, [1], 1), decode: stage(3, 5) }).code).not.toBe('move');
  });

  test('pinned and fixed instances are not moved', () => {
    const d = decideGroup(0, 5, { mode: 'load', margin: 0.2, prefill: stage(3, 0.1, []), decode: stage(1, 2) });
    expect(d.code).toBe('none_movable');
    expect(d.reason).toContain('no prefill instance may be moved (pinned, or fixed in the topology file)');
  });

  test('the move back asks as much: right after a move at a threshold, the reverse is not proposed', () => {
    // Decode at 1.0 on 2 (just saturated), prefill 0.3 on 2 → 1P3D; the same load on 1P3D:
    const moved = decideGroup(0, 5, { mode: 'load', margin: 0.2, prefill: stage(2, 0.3), decode: stage(2, 1) });
    expect(moved.move).toEqual({ id: 20, from: 'prefill', to: 'decode' });
    const after = decideGroup(0, 6, { mode: 'load', margin: 0.2, prefill: stage(1, 0.6), decode: stage(3, 2 / 3) });
    expect(after.code).toBe('balanced');
  });
});

describe('SLA mode', () => {
  test('moves one instance toward the split that lowers the busier stage by the margin', () => {
    // Demand: 0.3 P-instances and 2.5 D-instances on 3P1D.
    const d = decideGroup(0, 5, { mode: 'sla', margin: 0.2, prefill: stage(3, 0.1), decode: stage(1, 2.5) });
    expect(d.code).toBe('move');
    expect(d.move).toEqual({ id: 30, from: 'prefill', to: 'decode' });
    expect(d.reason).toContain('busier stage 2.50, 1.25 after the move');
    // On 2P2D the next step still gains enough: 1.25 → 0.83.
    expect(decideGroup(0, 6, { mode: 'sla', margin: 0.2, prefill: stage(2, 0.15), decode: stage(2, 1.25) }).code).toBe('move');
    // On 1P3D moving back would raise the busier stage: stay.
    expect(decideGroup(0, 7, { mode: 'sla', margin: 0.2, prefill: stage(1, 0.3), decode: stage(3, 2.5 / 3) }).code).toBe('balanced');
  });

  test('a cluster far from its capacity is left as it is', () => {
    const d = decideGroup(0, 5, { mode: 'sla', margin: 0.2, prefill: stage(3, 0.05), decode: stage(1, 0.7) });
    expect(d.code).toBe('balanced');
    expect(d.reason).toContain('both stages below 0.80 of their capacity at the targets');
  });

  test('a gain smaller than the margin is not worth a move', () => {
    // 2P2D at 0.9 and 0.85: the best move gives max(1.8, 0.57) or max(0.6, 1.7): worse.
    expect(decideGroup(0, 5, { mode: 'sla', margin: 0.2, prefill: stage(2, 0.9), decode: stage(2, 0.85) }).code).toBe('balanced');
  });
});
