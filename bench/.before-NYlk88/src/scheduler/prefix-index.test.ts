import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../core/errors.ts';
import { DEFAULT_HOLDERS_PER_BLOCK, DEFAULT_PREFIX_CAPACITY, PrefixIndex } from './prefix-index.ts';

describe('PrefixIndex', () => {
  test('records holders per hash, most recent last', () => {
    const index = new PrefixIndex();
    index.record(1, [10, 11]);
    index.record(2, [10]);
    expect(index.holders(10)).toEqual([1, 2]);
    expect(index.holders(11)).toEqual([1]);
    index.record(1, [10]);
    expect(index.holders(10)).toEqual([2, 1]);
    expect(index.holders(99)).toEqual([]);
    expect(index.size).toBe(2);
    expect(index.blocksOf(1)).toBe(2);
    index.record(1, []);
    expect(index.blocksOf(1)).toBe(2);
  });

  test('per-instance capacity evicts the least recent hashes, deep blocks before the shared prefix', () => {
    const index = new PrefixIndex({ capacity: 3 });
    index.record(1, [10, 11, 12]);
    index.record(1, [10, 20]); // 10 refreshed, 20 added: 12 (the deepest of the old prompt) goes
    expect(index.blocksOf(1)).toBe(3);
    expect(index.holders(12)).toEqual([]);
    expect(index.holders(10)).toEqual([1]);
    expect(index.holders(11)).toEqual([1]);
    expect(index.holders(20)).toEqual([1]);
  });

  test('the instance’s own block count caps its capacity further', () => {
    const index = new PrefixIndex({ capacity: 100 });
    index.record(1, [1, 2, 3, 4, 5], 2);
    expect(index.blocksOf(1)).toBe(2);
    expect(index.holders(1)).toEqual([1]);
    expect(index.holders(5)).toEqual([]);
  });

  test('holders per hash are bounded; the least recent holder is dropped', () => {
    const index = new PrefixIndex({ holdersPerBlock: 2 });
    index.record(1, [10]);
    index.record(2, [10]);
    index.record(3, [10]);
    expect(index.holders(10)).toEqual([2, 3]);
    expect(index.blocksOf(1)).toBe(0);
  });

  test('forget() drops an instance everywhere', () => {
    const index = new PrefixIndex();
    index.record(1, [10, 11]);
    index.record(2, [10]);
    index.forget(1);
    index.forget(7);
    expect(index.holders(10)).toEqual([2]);
    expect(index.holders(11)).toEqual([]);
    expect(index.size).toBe(1);
  });

  test('memory stays bounded under a stream of distinct prompts', () => {
    const index = new PrefixIndex({ capacity: 50 });
    for (let i = 0; i < 10_000; i++) index.record(i % 4, [i * 3, i * 3 + 1, i * 3 + 2]);
    expect(index.size).toBeLessThanOrEqual(4 * 50);
    for (let id = 0; id < 4; id++) expect(index.blocksOf(id)).toBe(50);
  });

  test('defaults and option checks', () => {
    const index = new PrefixIndex();
    expect(index.capacity).toBe(DEFAULT_PREFIX_CAPACITY);
    expect(index.holdersPerBlock).toBe(DEFAULT_HOLDERS_PER_BLOCK);
    for (const [options, path] of [
      [{ capacity: 0 }, 'prefix.capacity'],
      [{ holdersPerBlock: 2.5 }, 'prefix.holdersPerBlock'],
    ] as const) {
      let caught: unknown;
      try {
        new PrefixIndex(options);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(PdlinkError);
      expect((caught as PdlinkError).issues[0]?.path).toBe(path);
    }
  });
});
