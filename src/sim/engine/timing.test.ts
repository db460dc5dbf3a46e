import { describe, expect, test } from 'bun:test';
import { joinBatch } from './legs/generating.ts';
import { decodeTokenMs, prefillMs } from './timing.ts';
import type { LegEngine } from './types.ts';

describe('the timing model', () => {
  test('prefill costs only the uncached tokens', () => {
    expect(prefillMs(1000, 0, 0.1)).toBeCloseTo(100);
    expect(prefillMs(1000, 512, 0.1)).toBeCloseTo(48.8);
    expect(prefillMs(1000, 1000, 0.1)).toBe(0);
    expect(prefillMs(16, 32, 1)).toBe(0); // never negative
  });

  test('decode time per token grows linearly with the batch', () => {
    expect(decodeTokenMs(10, 0.05, 1)).toBe(10);
    expect(decodeTokenMs(10, 0.05, 3)).toBeCloseTo(11);
    expect(decodeTokenMs(10, 0, 50)).toBe(10);
    expect(decodeTokenMs(10, 0.5, 0)).toBe(10);
  });

  test('a seat in the batch counts while held, and leaving twice counts once', () => {
    const engine = { generating: 0, options: { decodeMsPerToken: 10, decodeBatchSlowdown: 0.5 } } as unknown as LegEngine;
    const a = joinBatch(engine);
    expect(a.tokenMs()).toBe(10);
    const b = joinBatch(engine);
    expect(a.tokenMs()).toBe(15);
    expect(b.tokenMs()).toBe(15);
    b.leave();
    b.leave();
    expect(engine.generating).toBe(1);
    expect(a.tokenMs()).toBe(10);
    a.leave();
    expect(engine.generating).toBe(0);
  });
});
