import { describe, expect, test } from 'bun:test';
import { syntheticWorkload, type SyntheticSettings } from './synthetic.ts';
import { prefixReuse } from './workload.ts';

const SETTINGS: SyntheticSettings = {
  requests: 2000,
  rate: 10,
  input: { kind: 'fixed', value: 1000 },
  output: { kind: 'uniform', min: 1, max: 9 },
  prefixShare: 0.5,
  prefixGroups: 4,
  blockTokens: 100,
  seed: 7,
};

describe('syntheticWorkload', () => {
  test('Poisson arrivals at the rate asked for', () => {
    const w = syntheticWorkload(SETTINGS);
    const span = w.items[w.items.length - 1]!.arrivalMs / 1000;
    // 1999 gaps of mean 100 ms: the observed rate is within a few percent of 10/s.
    expect((w.items.length - 1) / span).toBeGreaterThan(9.3);
    expect((w.items.length - 1) / span).toBeLessThan(10.7);
    expect(w.items.every((item, i) => i === 0 || item.arrivalMs >= w.items[i - 1]!.arrivalMs)).toBe(true);
  });

  test('the first prefixShare of the blocks come from a group prefix, the rest are private', () => {
    const w = syntheticWorkload(SETTINGS);
    expect(w.items.every((i) => i.hashIds.length === 10 && i.outputTokens >= 1 && i.outputTokens <= 9)).toBe(true);
    // 5 of 10 blocks shared over 4 groups: all but the groups' first requests reuse them.
    expect(prefixReuse(w.items)).toBeCloseTo(0.5, 2);
    expect(prefixReuse(syntheticWorkload({ ...SETTINGS, prefixShare: 0 }).items)).toBe(0);
  });

  test('one seed, one workload', () => {
    expect(syntheticWorkload(SETTINGS)).toEqual(syntheticWorkload(SETTINGS));
    expect(syntheticWorkload({ ...SETTINGS, seed: 8 }).items[1]!.arrivalMs).not.toBe(syntheticWorkload(SETTINGS).items[1]!.arrivalMs);
  });

  test('a second phase from a request on: its own rate and lengths, the source saying so', () => {
    const w = syntheticWorkload({
      ...SETTINGS,
      requests: 400,
      output: { kind: 'fixed', value: 8 },
      then: { from: 200, rate: 20, input: { kind: 'fixed', value: 100 }, output: { kind: 'fixed', value: 300 } },
    });
    expect(w.items.slice(0, 200).every((i) => i.inputTokens === 1000 && i.outputTokens === 8)).toBe(true);
    expect(w.items.slice(200).every((i) => i.inputTokens === 100 && i.outputTokens === 300)).toBe(true);
    const first = (w.items[199]!.arrivalMs - w.items[0]!.arrivalMs) / 199;
    const second = (w.items[399]!.arrivalMs - w.items[200]!.arrivalMs) / 199;
    // Mean gaps of 100 ms, then 50 ms.
    expect(first / second).toBeGreaterThan(1.6);
    expect(first / second).toBeLessThan(2.5);
    expect(w.source).toBe(
      'synthetic: 400 requests, Poisson 10/s, prefix share 0.5 over 4 groups, seed 7, prompts 1000, outputs 8; from request 200: Poisson 20/s, prompts 100, outputs 300',
    );
  });
});
