import { describe, expect, test } from 'bun:test';
import { BlockPool } from './block-pool.ts';

function manualTimers() {
  const pending = new Map<number, () => void>();
  let next = 1;
  return {
    setTimer: (fn: () => void) => {
      pending.set(next, fn);
      return next++;
    },
    clearTimer: (timer: unknown) => void pending.delete(timer as number),
    fireAll: () => {
      const fns = [...pending.values()];
      pending.clear();
      for (const fn of fns) fn();
    },
    get count() {
      return pending.size;
    },
  };
}

describe('BlockPool', () => {
  test('allocates distinct free blocks and gives them back', () => {
    const pool = new BlockPool({ numBlocks: 8 });
    const a = pool.allocate('a', 3)!;
    const b = pool.allocate('b', 5)!;
    expect([...a]).toEqual([0, 1, 2]);
    expect(new Set([...a, ...b]).size).toBe(8);
    expect(pool.free).toBe(0);
    expect(pool.allocate('c', 1)).toBeUndefined();
    expect(pool.release('a')).toBe(3);
    expect(pool.release('a')).toBe(0);
    expect(pool.free).toBe(3);
    expect(pool.allocate('c', 3)).toBeDefined();
    expect(pool.owners).toBe(2);
  });

  test('refuses a second allocation for one owner and bad counts', () => {
    const pool = new BlockPool({ numBlocks: 4 });
    pool.allocate('a', 1);
    expect(() => pool.allocate('a', 1)).toThrow(/already holds/);
    expect(() => pool.allocate('b', -1)).toThrow(RangeError);
    expect(() => new BlockPool({ numBlocks: 0 })).toThrow(RangeError);
    expect(pool.allocate('z', 0)).toEqual(new Uint32Array(0));
  });

  test('a lease frees the blocks when it runs out, unless released first', () => {
    const timers = manualTimers();
    const expired: string[] = [];
    const pool = new BlockPool({ numBlocks: 4, onExpire: (owner) => expired.push(owner), ...timers });
    pool.allocate('kept', 2, 1000);
    pool.allocate('released', 1, 1000);
    expect(pool.release('released')).toBe(1);
    expect(timers.count).toBe(1);
    timers.fireAll();
    expect(expired).toEqual(['kept']);
    expect(pool.free).toBe(4);
    expect(pool.expired).toBe(1);
    expect(pool.release('kept')).toBe(0);
  });

  test('clear frees everything and stops the leases', () => {
    const timers = manualTimers();
    const pool = new BlockPool({ numBlocks: 4, ...timers });
    pool.allocate('a', 2, 1000);
    pool.clear();
    expect(pool.free).toBe(4);
    expect(timers.count).toBe(0);
  });
});
