import { describe, expect, test } from 'bun:test';
import { choosePath } from './pd-path.ts';

describe('choosePath', () => {
  test('off by default: always disaggregated', () => {
    expect(choosePath({}, 0, [1_000, 1_000])).toBe('disaggregated');
  });

  test('local exactly when the uncached prompt is at most max_local_prefill_length', () => {
    const rule = { maxLocalPrefillLength: 256 };
    expect(choosePath(rule, 256, [])).toBe('local');
    expect(choosePath(rule, 0, [])).toBe('local');
    expect(choosePath(rule, 257, [])).toBe('disaggregated');
    expect(choosePath(rule, undefined, [])).toBe('disaggregated');
  });

  test('local exactly when every P queue is over max_prefill_queue_size', () => {
    const rule = { maxPrefillQueueSize: 4 };
    expect(choosePath(rule, 10_000, [5, 9])).toBe('local');
    expect(choosePath(rule, 10_000, [5, 4])).toBe('disaggregated');
    expect(choosePath(rule, 10_000, [])).toBe('disaggregated');
  });

  test('either limit met is enough', () => {
    const rule = { maxLocalPrefillLength: 16, maxPrefillQueueSize: 4 };
    expect(choosePath(rule, 16, [0])).toBe('local');
    expect(choosePath(rule, 17, [5])).toBe('local');
    expect(choosePath(rule, 17, [4])).toBe('disaggregated');
  });
});
