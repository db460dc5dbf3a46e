import { describe, expect, test } from 'bun:test';
import * as fc from 'fast-check';
import { TestCluster, testInstance, type TestInstanceSpec } from '../../../test/doubles/cluster.ts';
import { createHealth } from '../breakers.ts';
import { createScheduler } from '../scheduler.ts';
import { TestLoads } from '../../../test/doubles/scheduler.ts';
import type { Pair, PickRequest } from '../types.ts';
import { SchedulerNode } from '../node.ts';
import { Pool } from '../pool.ts';
import { PrefixIndex } from '../prefix-index.ts';
import { cacheAffinity } from './cache-affinity.ts';
import type { PolicyContext } from './policy.ts';

const BLOCK = 4;
const P = (id: number, extra: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({ id, role: 'prefill', group: 0, ...extra });
const D = (id: number, peers: number[], extra: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({
  id,
  role: 'decode',
  group: 0,
  peers,
  ...extra,
});

/** A prompt of `blocks` full blocks whose content starts from `seed`. */
const prompt = (blocks: number, seed = 0): number[] => Array.from({ length: blocks * BLOCK }, (_, i) => seed * 1000 + i);

function setup(specs: TestInstanceSpec[]) {
  const cluster = new TestCluster(specs);
  const loads = new TestLoads();
  const clock = { now: 0 };
  const health = createHealth({ clock: () => clock.now, failureThreshold: 1 });
  const scheduler = createScheduler({
    cluster,
    loads,
    health,
    blockSize: BLOCK,
    policy: { prefill: 'cache_affinity', decode: 'load_balance' },
  });
  const pick = (request: PickRequest) => scheduler.pick(request) as Pair;
  return { cluster, loads, health, scheduler, pick };
}

// Three P's; P0 is the least loaded, so without affinity every pick lands on P0.
const cluster3 = () => [P(0), P(1, { availSlots: 80 }), P(2, { availSlots: 60 }), D(10, [0, 1, 2])];

describe('cache_affinity', () => {
  test('no recorded prefix: least-loaded P, reason cache_miss', () => {
    const { pick } = setup(cluster3());
    const result = pick({ promptTokens: prompt(3) });
    expect(result.p.id).toBe(0);
    expect(result.reason).toBe('cache_miss');
    expect(result.matchedBlocks).toBe(0);
  });

  test('a P that prefilled the prompt gets the next one sharing its prefix', () => {
    const { scheduler, pick } = setup(cluster3());
    scheduler.recordPrefill(1, { promptTokens: prompt(3) });
    const shared = [...prompt(2), ...prompt(2, 7)];
    const result = pick({ promptTokens: shared });
    expect(result.p.id).toBe(1);
    expect(result.reason).toBe('cache_hit');
    expect(result.matchedBlocks).toBe(2);
    expect(result.policy).toEqual({ prefill: 'cache_affinity', decode: 'load_balance' });
  });

  test('the longest match wins over a shorter one, whatever the loads', () => {
    const { scheduler, pick } = setup(cluster3());
    scheduler.recordPrefill(1, { promptTokens: prompt(1) });
    scheduler.recordPrefill(2, { promptTokens: prompt(4) });
    const result = pick({ promptTokens: prompt(5) });
    expect([result.p.id, result.matchedBlocks]).toEqual([2, 4]);
  });

  test('equal matches are broken by load', () => {
    const { scheduler, pick } = setup(cluster3());
    scheduler.recordPrefill(2, { promptTokens: prompt(2) });
    scheduler.recordPrefill(1, { promptTokens: prompt(2) });
    expect(pick({ promptTokens: prompt(2) }).p.id).toBe(1); // 80 free slots beats 60
  });

  test('the best match overloaded: fall back to load, reason cache_overloaded', () => {
    const { scheduler, pick, loads } = setup(cluster3());
    scheduler.recordPrefill(2, { promptTokens: prompt(3) });
    loads.reserve(2, 60, 0); // P2 has no free slot left
    const result = pick({ promptTokens: prompt(3) });
    expect(result.p.id).toBe(0);
    expect(result.reason).toBe('cache_overloaded');
    expect(result.matchedBlocks).toBe(0);
  });

  test('too few free blocks for the request counts as overloaded', () => {
    const { scheduler, pick } = setup([P(0), P(1, { availBlocks: 10 }), D(10, [0, 1])]);
    scheduler.recordPrefill(1, { promptTokens: prompt(3) });
    expect(pick({ promptTokens: prompt(3), promptBlocks: 5 }).p.id).toBe(1);
    const result = pick({ promptTokens: prompt(3), promptBlocks: 50 });
    expect([result.p.id, result.reason]).toEqual([0, 'cache_overloaded']);
  });

  test('a holder whose every D is full is overloaded too', () => {
    const { scheduler, pick, loads } = setup([P(0), P(1), D(10, [0]), D(11, [1])]);
    scheduler.recordPrefill(1, { promptTokens: prompt(2) });
    loads.reserve(11, 100, 0);
    const result = pick({ promptTokens: prompt(2) });
    expect([result.p.id, result.d.id, result.reason]).toEqual([0, 10, 'cache_overloaded']);
  });

  test('an unhealthy or excluded holder does not count as a match', () => {
    const { scheduler, pick, health } = setup(cluster3());
    scheduler.recordPrefill(2, { promptTokens: prompt(3) });
    scheduler.recordPrefill(1, { promptTokens: prompt(2) });
    health.recordFailure(2);
    let result = pick({ promptTokens: prompt(3) });
    expect([result.p.id, result.reason, result.matchedBlocks]).toEqual([1, 'cache_hit', 2]);
    result = pick({ promptTokens: prompt(3), excludeP: new Set([1]) });
    expect([result.p.id, result.reason]).toEqual([0, 'cache_miss']);
  });

  test('works from prompt text when there are no token ids', () => {
    const { scheduler, pick } = setup(cluster3());
    const system = 'Answer in one sentence, citing the manual. '.repeat(4);
    scheduler.recordPrefill(2, { promptText: `${system}What is KV cache?` });
    const result = pick({ promptText: `${system}What is prefill?` });
    expect(result.p.id).toBe(2);
    expect(result.reason).toBe('cache_hit');
    expect(result.matchedBlocks).toBeGreaterThan(0);
  });

  test('the same request object is hashed once for pick and recordPrefill', () => {
    const { scheduler, pick } = setup(cluster3());
    const request = { promptTokens: prompt(2) };
    const first = pick(request);
    scheduler.recordPrefill(first.p.id, request);
    expect(pick({ promptTokens: prompt(2) })).toMatchObject({ reason: 'cache_hit', matchedBlocks: 2 });
  });

  test('a removed P is forgotten; unknown or decode ids are ignored by recordPrefill', () => {
    const { scheduler, pick, cluster } = setup(cluster3());
    scheduler.recordPrefill(2, { promptTokens: prompt(2) });
    scheduler.recordPrefill(10, { promptTokens: prompt(2) });
    scheduler.recordPrefill(99, { promptTokens: prompt(2) });
    cluster.refresh([P(0), P(1, { availSlots: 80 }), D(10, [0, 1, 2])]);
    cluster.refresh(cluster3());
    expect(pick({ promptTokens: prompt(2) }).reason).toBe('cache_miss');
    expect(() => scheduler.recordPrefill(-1, {})).toThrow('pId: must be an instance id');
  });

  test('recordPrefill is a no-op under other policies', () => {
    const scheduler = createScheduler({ cluster: new TestCluster(cluster3()) });
    scheduler.recordPrefill(2, { promptTokens: prompt(2) });
    expect((scheduler.pick({ promptTokens: prompt(2) }) as Pair).p.id).toBe(0);
  });

  test('a bad token id is rejected with its index', () => {
    const { scheduler } = setup(cluster3());
    expect(() => scheduler.pick({ promptTokens: [1, 2, -3] })).toThrow('promptTokens[2]: must be an integer in [0, 4294967295]');
  });
});

describe('cache_affinity first()', () => {
  /** A context whose fits() refuses the ids in `unfit` and records what it was asked. */
  const contextOf = (hashes: readonly number[], unfit: ReadonlySet<number>, excluded: ReadonlySet<number>) => {
    const asked: number[] = [];
    const context: PolicyContext = {
      rng: () => 0,
      hashes,
      fits: (node) => {
        asked.push(node.id);
        return !unfit.has(node.id);
      },
      excluded: (node) => excluded.has(node.id),
      reason: 'least_load',
      matchedBlocks: 0,
    };
    return { context, asked };
  };

  test('is the member order offers first, with the same reason and matched blocks, and the same members asked', () => {
    // Mostly usable holders, so that several compete at one level; each way of being unusable still comes up.
    const mostly = fc.integer({ min: 0, max: 5 }).map((n) => n > 0);
    const node = fc.record({
      load: fc.integer({ min: 0, max: 9 }),
      admissible: mostly,
      healthyLinks: mostly.map(Number),
      inPool: mostly,
      fits: mostly,
      excluded: mostly.map((usable) => !usable),
    });
    const scenario = fc.record({
      nodes: fc.array(node, { minLength: 0, maxLength: 7 }),
      // Each record: a P index and how many of the prompt's 4 blocks it prefilled.
      records: fc.array(fc.tuple(fc.nat(6), fc.integer({ min: 1, max: 4 })), { maxLength: 10 }),
    });
    fc.assert(
      fc.property(scenario, ({ nodes: specs, records }) => {
        const hashes = [11, 12, 13, 14];
        const nodes = specs.map((spec, id) => {
          const n = new SchedulerNode(testInstance({ id, role: 'prefill' }), 'prefill');
          Object.assign(n, { load: spec.load / 10, admissible: spec.admissible, healthyLinks: spec.healthyLinks });
          return n;
        });
        const pool = new Pool<SchedulerNode>();
        nodes.forEach((n, i) => specs[i]!.inPool && pool.add(n));
        const prefix = new PrefixIndex();
        for (const [index, blocks] of records) if (index < nodes.length) prefix.record(index, hashes.slice(0, blocks));
        const policy = cacheAffinity(prefix, (id) => nodes[id]);
        const unfit = new Set(specs.flatMap((s, id) => (s.fits ? [] : [id])));
        const excluded = new Set(specs.flatMap((s, id) => (s.excluded ? [id] : [])));
        const viaFirst = contextOf(hashes, unfit, excluded);
        const viaOrder = contextOf(hashes, unfit, excluded);
        const first = policy.first!(pool, viaFirst.context);
        const ordered = policy.order(pool, viaOrder.context)[Symbol.iterator]().next();
        expect(first?.id).toBe(ordered.done === true ? undefined : ordered.value.id);
        expect([viaFirst.context.reason, viaFirst.context.matchedBlocks]).toEqual([
          viaOrder.context.reason,
          viaOrder.context.matchedBlocks,
        ]);
        expect(viaFirst.asked).toEqual(viaOrder.asked);
      }),
      { numRuns: 500 },
    );
  });
});
