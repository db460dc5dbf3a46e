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
});
