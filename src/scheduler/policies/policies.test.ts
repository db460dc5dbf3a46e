import { describe, expect, test } from 'bun:test';
import { testInstance } from '../../../test/doubles/cluster.ts';
import { SchedulerNode } from '../node.ts';
import { Pool } from '../pool.ts';
import { loadBalance } from './load-balance.ts';
import type { Policy, PolicyContext } from './policy.ts';
import { powerOfTwo } from './power-of-two.ts';
import { roundRobin } from './round-robin.ts';

function poolOf(loads: number[]): Pool<SchedulerNode> {
  const pool = new Pool<SchedulerNode>();
  loads.forEach((load, id) => {
    const n = new SchedulerNode(testInstance({ id, role: 'decode' }), 'decode');
    n.load = load;
    pool.add(n);
  });
  return pool;
}

function context(rng: () => number = () => 0): PolicyContext {
  return { rng, hashes: [], fits: () => true, excluded: () => false, reason: 'least_load', matchedBlocks: 0 };
}

const firstN = (policy: Policy, pool: Pool<SchedulerNode>, ctx: PolicyContext, n: number): number[] => {
  const ids: number[] = [];
  for (const m of policy.order(pool, ctx)) {
    ids.push(m.id);
    if (ids.length === n) break;
  }
  return ids;
};

describe('load_balance', () => {
  test('walks the pool in load order, ties by id', () => {
    const ctx = context();
    expect(firstN(loadBalance, poolOf([0.5, 0.2, 0.2, 0.9]), ctx, 4)).toEqual([1, 2, 0, 3]);
    expect(ctx.reason).toBe('least_load');
  });

  test('an empty pool yields nothing', () => {
    expect(firstN(loadBalance, poolOf([]), context(), 1)).toEqual([]);
  });

  test('first() is the member the order offers first, small pool or large', () => {
    for (const loads of [[0.5, 0.2, 0.2, 0.9], Array.from({ length: 40 }, (_, i) => ((i * 7) % 11) / 11), []]) {
      const pool = poolOf(loads);
      const ctx: PolicyContext = { ...context(), reason: 'cache_hit' };
      expect(loadBalance.first!(pool, ctx)?.id).toBe(firstN(loadBalance, pool, context(), 1)[0]);
      expect(ctx.reason).toBe('least_load');
    }
  });
});

describe('round_robin', () => {
  test('each walk starts after the member the previous one stopped at', () => {
    const pool = poolOf([0.9, 0.1, 0.5]);
    const ctx = context();
    expect(firstN(roundRobin, pool, ctx, 1)).toEqual([0]);
    expect(firstN(roundRobin, pool, ctx, 1)).toEqual([1]);
    expect(firstN(roundRobin, pool, ctx, 2)).toEqual([2, 0]); // 2 passed over, 0 taken
    expect(firstN(roundRobin, pool, ctx, 1)).toEqual([1]);
    expect(ctx.reason).toBe('round_robin');
  });

  test('a full walk offers every member once', () => {
    const pool = poolOf([0, 0, 0, 0]);
    expect(firstN(roundRobin, pool, context(), 10).sort()).toEqual([0, 1, 2, 3]);
  });

  test('the cursor survives the pool shrinking', () => {
    const pool = poolOf([0, 0, 0]);
    const ctx = context();
    firstN(roundRobin, pool, ctx, 3);
    pool.delete(pool.at(2) as SchedulerNode);
    expect(firstN(roundRobin, pool, ctx, 2).sort()).toEqual([0, 1]);
    expect(firstN(roundRobin, poolOf([]), ctx, 1)).toEqual([]);
  });
});

describe('power_of_two', () => {
  test('offers the less loaded of two distinct samples first, then the other, then load order', () => {
    const draws = [0.7, 0.0];
    const ctx = context(() => draws.shift() ?? 0);
    // size 4: first draw 0.7 → index 2 (load .8); second 0.0 → index 0 of the other three (load .3).
    const order = firstN(powerOfTwo, poolOf([0.3, 0.1, 0.8, 0.5]), ctx, 6);
    expect(order.slice(0, 2)).toEqual([0, 2]);
    expect(order.slice(2)).toEqual([1, 0, 3, 2]);
    expect(ctx.reason).toBe('least_load');
  });

  test('the two samples are never the same member', () => {
    const ctx = context(() => 0.5);
    // size 2: 0.5 → index 1; second draw over the other one → index 0.
    expect(firstN(powerOfTwo, poolOf([0.2, 0.4]), ctx, 2).sort()).toEqual([0, 1]);
  });

  test('a single member needs no draw; an empty pool yields nothing', () => {
    let draws = 0;
    const ctx = context(() => {
      draws++;
      return 0;
    });
    expect(firstN(powerOfTwo, poolOf([0.4]), ctx, 3)).toEqual([0]);
    expect(draws).toBe(0);
    expect(ctx.reason).toBe('power_of_two');
    expect(firstN(powerOfTwo, poolOf([]), ctx, 1)).toEqual([]);
  });
});
