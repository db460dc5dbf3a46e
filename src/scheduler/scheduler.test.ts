import { describe, expect, test } from 'bun:test';
import { TestCluster, type TestInstanceSpec } from '../../test/doubles/cluster.ts';
import { PdlinkError } from '../core/errors.ts';
import { createHealth } from './breakers.ts';
import { createScheduler, type SchedulerOptions } from './scheduler.ts';
import { TestLoads } from '../../test/doubles/scheduler.ts';
import type { Pair, PickFailure, PickResult } from './types.ts';

const P = (id: number, extra: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({ id, role: 'prefill', group: 0, ...extra });
const D = (id: number, peers: number[], extra: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({
  id,
  role: 'decode',
  group: 0,
  peers,
  ...extra,
});

function setup(specs: TestInstanceSpec[], options: Partial<SchedulerOptions> = {}) {
  const cluster = new TestCluster(specs);
  const loads = new TestLoads();
  const clock = { now: 0 };
  const health = createHealth({ clock: () => clock.now, failureThreshold: 1, cooldownMs: 1_000 });
  const scheduler = createScheduler({ cluster, loads, health, ...options });
  return { cluster, loads, clock, health, scheduler };
}

function pair(result: PickResult): [number, number] {
  if (!result.ok) throw new Error(`expected a pair, got ${result.reason}: ${result.message}`);
  return [result.p.id, result.d.id];
}

function failure(result: PickResult): PickFailure {
  if (result.ok) throw new Error(`expected a failure, got ${result.p.id}/${result.d.id}`);
  return result;
}

describe('pick: the group/peer rule', () => {
  test('D is chosen only inside P’s group and only among D’s that list P', () => {
    // P0's least-loaded candidates by load are D12 (other group) and D13 (does not list P0): both ineligible.
    const { scheduler } = setup([P(0), D(11, [0], { availSlots: 10 }), D(12, [0], { group: 1 }), D(13, [1]), P(1)]);
    expect(pair(scheduler.pick({ excludeP: new Set([1]) }))).toEqual([0, 11]);
  });

  test('P is chosen among P’s that have an eligible D, even when a busier one is the only paired P', () => {
    const { scheduler } = setup([P(0, { availSlots: 10 }), P(1), D(10, [0])]);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
  });

  test('a D listing a P of another group pairs with nothing', () => {
    const { scheduler } = setup([P(0, { group: 1 }), D(10, [0])]);
    expect(failure(scheduler.pick()).reason).toBe('no_linked_decode');
  });

  test('role-undefined instances are never scheduled', () => {
    const { scheduler } = setup([
      { id: 0, role: 'undefined' },
      { id: 1, role: 'undefined' },
    ]);
    expect(failure(scheduler.pick()).reason).toBe('no_prefill');
    const other = setup([P(0), { id: 1, role: 'undefined', peers: [0] }]);
    expect(failure(other.scheduler.pick()).reason).toBe('no_decode');
  });
});

describe('pick: load_balance (default)', () => {
  test('least-loaded P, then least-loaded eligible D', () => {
    const { scheduler } = setup([
      P(0, { availSlots: 50 }),
      P(1, { availSlots: 80 }),
      D(10, [0, 1], { availBlocks: 100 }),
      D(11, [0, 1], { availBlocks: 900 }),
    ]);
    const result = scheduler.pick() as Pair;
    expect(pair(result)).toEqual([1, 11]);
    expect(result.policy).toEqual({ prefill: 'load_balance', decode: 'load_balance' });
    expect(result.reason).toBe('least_load');
    expect(result.matchedBlocks).toBe(0);
  });

  test('reservations from the load source count against reported capacity', () => {
    const { scheduler, loads } = setup([P(0), P(1), D(10, [0, 1]), D(11, [0, 1])]);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
    loads.reserve(0, 1, 8);
    loads.reserve(10, 1, 8);
    expect(pair(scheduler.pick())).toEqual([1, 11]);
  });

  test('an instance whose reported capacity is exhausted is skipped', () => {
    const { scheduler, cluster } = setup([P(0), P(1), D(10, [0, 1])]);
    cluster.patch(P(0, { availSlots: 0 }));
    expect(pair(scheduler.pick())).toEqual([1, 10]);
  });
});

describe('pick: exclusions', () => {
  test('excludeP and excludeD move the pick to the next candidate', () => {
    const { scheduler } = setup([P(0), P(1), D(10, [0, 1]), D(11, [0, 1])]);
    expect(pair(scheduler.pick({ excludeP: new Set([0]) }))).toEqual([1, 10]);
    expect(pair(scheduler.pick({ excludeD: new Set([10]) }))).toEqual([0, 11]);
  });

  test('a P whose every eligible D is excluded is passed over', () => {
    const { scheduler } = setup([P(0), P(1, { availSlots: 10 }), D(10, [0]), D(11, [1])]);
    expect(pair(scheduler.pick({ excludeD: new Set([10]) }))).toEqual([1, 11]);
  });

  test('excluding everything fails with `excluded`', () => {
    const { scheduler } = setup([P(0), D(10, [0])]);
    const result = failure(scheduler.pick({ excludeP: new Set([0]) }));
    expect(result.reason).toBe('excluded');
    expect(result.message).toBe('every prefill/decode pair with room is excluded by the request');
    expect(failure(scheduler.pick({ excludeD: new Set([10]) })).reason).toBe('excluded');
  });
});

describe('pick: capacity', () => {
  test('promptBlocks skips instances with fewer free blocks', () => {
    const { scheduler } = setup([
      P(0, { availBlocks: 900 }),
      P(1, { availBlocks: 500 }),
      D(10, [0, 1], { availBlocks: 100 }),
      D(11, [0, 1], { availBlocks: 40 }),
    ]);
    // P0 is least loaded; its D's by load: D10, then D11 (too small for 60 blocks).
    expect(pair(scheduler.pick({ promptBlocks: 60 }))).toEqual([0, 10]);
    const none = failure(scheduler.pick({ promptBlocks: 200 }));
    expect(none.reason).toBe('no_capacity');
    expect(none.message).toBe('no healthy prefill/decode pair has a free slot and 200 free blocks on both instances');
  });

  test('without promptBlocks, token ids give ⌈tokens / block_size⌉ per instance', () => {
    const { scheduler } = setup([P(0), D(10, [0], { availBlocks: 2, blockSize: 128 }), D(11, [0], { availBlocks: 3, blockSize: 128 })]);
    // 300 tokens need 3 blocks of 128: D10 has 2 free, so only D11 fits.
    expect(pair(scheduler.pick({ promptTokens: new Array(300).fill(7) }))).toEqual([0, 11]);
    expect(pair(scheduler.pick({ promptTokens: new Array(256).fill(7) }))).toEqual([0, 11]);
    expect(failure(scheduler.pick({ promptTokens: new Array(385).fill(7) }))).toEqual({
      ok: false,
      reason: 'no_capacity',
      message: 'no healthy prefill/decode pair has a free slot and free blocks for 385 prompt tokens on both instances',
    });
  });

  test('every instance full: no_capacity', () => {
    const { scheduler, loads } = setup([P(0, { totalSlots: 1 }), D(10, [0])]);
    loads.reserve(0, 1, 0);
    const result = failure(scheduler.pick());
    expect(result.reason).toBe('no_capacity');
    expect(result.message).toBe('no healthy prefill/decode pair has a free slot on both instances');
    loads.reserve(0, -1, 0);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
  });
});

describe('pick: failures name why', () => {
  test.each([
    ['no_prefill', [D(10, [])], 'no prefill instance is registered'],
    ['no_decode', [P(0)], 'no decode instance is registered'],
    ['no_linked_decode', [P(0), D(10, [])], 'no decode instance lists a prefill instance of its own group among its peers'],
  ] as const)('%s', (reason, specs, message) => {
    const { scheduler } = setup([...specs]);
    expect(scheduler.pick()).toEqual({ ok: false, reason, message });
  });

  test('pickOrThrow throws a 503 PdlinkError with the same message', () => {
    const { scheduler } = setup([]);
    let caught: unknown;
    try {
      scheduler.pickOrThrow();
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PdlinkError);
    expect((caught as PdlinkError).code).toBe('unavailable');
    expect((caught as PdlinkError).status).toBe(503);
    expect((caught as PdlinkError).message).toBe('no prefill instance is registered');
    const ok = setup([P(0), D(10, [0])]).scheduler.pickOrThrow();
    expect([ok.p.id, ok.d.id]).toEqual([0, 10]);
  });
});

describe('pick: health', () => {
  test('an instance with an open circuit is skipped', () => {
    const { scheduler, health } = setup([P(0), P(1), D(10, [0, 1]), D(11, [0, 1])]);
    health.recordFailure(0);
    health.recordFailure(10);
    expect(pair(scheduler.pick())).toEqual([1, 11]);
  });

  test('every P open: one early trial, then no_healthy_prefill while it runs', () => {
    const { scheduler, health } = setup([P(0), D(10, [0])]);
    health.recordFailure(0);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
    expect(health.state(0)).toBe('half_open');
    expect(failure(scheduler.pick()).reason).toBe('no_healthy_prefill');
  });

  test('every D open: the one whose cool-down ends first gets the trial, then no_healthy_decode', () => {
    const { scheduler, health, clock } = setup([P(0), D(10, [0]), D(11, [0])]);
    health.recordFailure(11);
    clock.now += 100;
    health.recordFailure(10);
    expect(pair(scheduler.pick())).toEqual([0, 11]);
    expect(health.state(10)).toBe('open');
    const result = failure(scheduler.pick());
    expect(result.reason).toBe('no_healthy_decode');
    expect(result.message).toContain('every decode instance linked to a healthy prefill instance is unhealthy');
    // A failed trial reopens it (for a new cool-down, ending after D10's); the next request trials D10.
    clock.now += 1;
    health.recordFailure(11);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
  });

  test('every P and every D open: one trial of each, in the same pick', () => {
    const { scheduler, health } = setup([P(0), D(10, [0])]);
    health.recordFailure(0);
    health.recordFailure(10);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
    expect(failure(scheduler.pick()).reason).toBe('no_healthy_prefill');
  });

  test('a retry that excludes the only closed D gets an open D’s trial', () => {
    const { scheduler, health } = setup([P(0), D(10, [0]), D(11, [0])]);
    health.recordFailure(11);
    expect(pair(scheduler.pick({ excludeD: new Set([10]) }))).toEqual([0, 11]);
  });

  test('no early trial for an open D the request excludes, or one linked to no usable P', () => {
    const { scheduler, health } = setup([P(0), P(1, { group: 1 }), D(10, [0]), D(11, [1], { group: 1 })]);
    health.recordFailure(10);
    health.recordFailure(1);
    expect(failure(scheduler.pick({ excludeD: new Set([10]), excludeP: new Set([1]) })).reason).not.toBe('no_prefill');
    expect(health.state(10)).toBe('open');
    expect(health.state(1)).toBe('open');
  });

  test('after the cool-down a half-open instance gets exactly one trial request', () => {
    const { scheduler, health, clock } = setup([P(0), P(1, { availSlots: 50 }), D(10, [0, 1])]);
    health.recordFailure(0);
    expect(pair(scheduler.pick())).toEqual([1, 10]);
    clock.now += 1_000;
    expect(pair(scheduler.pick())).toEqual([0, 10]); // the trial
    expect(health.state(0)).toBe('half_open');
    expect(health.admissible(0)).toBe(false);
    expect(pair(scheduler.pick())).toEqual([1, 10]); // no second trial while the first runs
    health.recordSuccess(0);
    expect(pair(scheduler.pick())).toEqual([0, 10]); // second trial (2 successes close)
    health.recordSuccess(0);
    expect(health.state(0)).toBe('closed');
    expect(pair(scheduler.pick())).toEqual([0, 10]);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
  });

  test('a failed trial takes the instance out again', () => {
    const { scheduler, health, clock } = setup([P(0), D(10, [0]), D(11, [0], { availSlots: 50 })]);
    health.recordFailure(10);
    clock.now += 1_000;
    expect(pair(scheduler.pick())).toEqual([0, 10]);
    health.recordFailure(10);
    expect(pair(scheduler.pick())).toEqual([0, 11]);
    expect(health.state(10)).toBe('open');
  });

  test('the scheduler creates its own circuit breakers when none are given', () => {
    const scheduler = createScheduler({ cluster: new TestCluster([P(0), D(10, [0])]) });
    expect(scheduler.health.state(0)).toBe('closed');
    for (let i = 0; i < 5; i++) scheduler.health.recordFailure(0);
    expect(scheduler.health.state(0)).toBe('open');
    expect(pair(scheduler.pick())).toEqual([0, 10]); // its early trial
    expect(failure(scheduler.pick()).reason).toBe('no_healthy_prefill');
  });
});

describe('pick: the Controller lists an open instance again', () => {
  const specs = [P(0), D(10, [0]), D(11, [0], { availSlots: 50 })];

  test('an unchanged snapshot gives the open instance its trial at once, and two successes bring it back', () => {
    const { scheduler, health, cluster } = setup(specs);
    health.recordFailure(10);
    expect(pair(scheduler.pick())).toEqual([0, 11]);
    cluster.refresh(specs); // the same snapshot, no diff: e.g. D10 restarted and relinked
    expect(health.state(10)).toBe('half_open');
    expect(pair(scheduler.pick())).toEqual([0, 10]);
    health.recordSuccess(10);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
    health.recordSuccess(10);
    expect(health.state(10)).toBe('closed');
  });

  test('a relisted instance that fails its trial is open again: one request per refresh, not a clean slate', () => {
    const { scheduler, health, cluster } = setup(specs);
    health.recordFailure(10);
    for (let round = 0; round < 3; round++) {
      cluster.refresh(specs);
      expect(pair(scheduler.pick())).toEqual([0, 10]);
      expect(pair(scheduler.pick())).toEqual([0, 11]); // the trial runs: nothing else goes to D10
      health.recordFailure(10);
      expect(health.state(10)).toBe('open');
    }
  });

  test('removed and added back: a trial, not a clean slate; a circuit of an instance gone for good is dropped', () => {
    const { scheduler, health, cluster } = setup(specs);
    health.recordFailure(10);
    cluster.refresh([P(0), D(11, [0], { availSlots: 50 })]);
    expect(health.state(10)).toBe('open');
    cluster.refresh(specs);
    expect(health.state(10)).toBe('half_open');
    expect(pair(scheduler.pick())).toEqual([0, 10]);
    cluster.refresh([P(0), D(11, [0], { availSlots: 50 })]);
    expect([...health.tripped()]).toEqual([]);
  });
});

describe('pick: requests in flight per instance (single_node_max_requests)', () => {
  test('an instance at its cap is not picked; with every candidate capped the reason is instance_cap', () => {
    const { scheduler, loads } = setup([P(0), P(1, { availSlots: 50 }), D(10, [0, 1])], { maxRequestsPerInstance: 2 });
    loads.reserve(0, 2, 0);
    expect(pair(scheduler.pick())).toEqual([1, 10]);
    loads.reserve(1, 2, 0);
    const result = failure(scheduler.pick());
    expect(result.reason).toBe('instance_cap');
    expect(result.message).toContain('single_node_max_requests');
    loads.reserve(0, -1, 0);
    expect(pair(scheduler.pick())).toEqual([0, 10]);
  });

  test('a capped D is skipped too; full by reported slots is no_capacity, not instance_cap', () => {
    const { scheduler, loads } = setup([P(0), D(10, [0]), D(11, [0], { availSlots: 1 })], { maxRequestsPerInstance: 3 });
    loads.reserve(10, 3, 0);
    expect(pair(scheduler.pick())).toEqual([0, 11]);
    loads.reserve(11, 1, 0);
    expect(failure(scheduler.pick()).reason).toBe('instance_cap');
    loads.reserve(10, -3, 0);
    loads.reserve(10, 0, 1000);
    expect(failure(scheduler.pick()).reason).toBe('no_capacity');
  });

  test('the cap must be a positive integer', () => {
    expect(() => setup([P(0)], { maxRequestsPerInstance: 0 })).toThrow('maxRequestsPerInstance');
  });
});

describe('pick: round_robin', () => {
  test('P’s in turn, and each P turns its own D cursor', () => {
    const { scheduler } = setup([P(0), P(1), D(10, [0, 1]), D(11, [0, 1])], { policy: { prefill: 'round_robin', decode: 'round_robin' } });
    const picks = Array.from({ length: 4 }, () => pair(scheduler.pick()));
    expect(picks.map(([p]) => p)).toEqual([0, 1, 0, 1]);
    // Each P sees D10 then D11.
    expect(picks.filter(([p]) => p === 0).map(([, d]) => d)).toEqual([10, 11]);
    expect(picks.filter(([p]) => p === 1).map(([, d]) => d)).toEqual([10, 11]);
    expect((scheduler.pick() as Pair).reason).toBe('round_robin');
  });

  test('a member the request cannot use is passed over and the turn continues after the one taken', () => {
    const { scheduler } = setup([P(0), P(1), P(2), D(10, [0, 1, 2])], { policy: { prefill: 'round_robin' } });
    expect(pair(scheduler.pick({ excludeP: new Set([0]) }))[0]).toBe(1);
    expect(pair(scheduler.pick())[0]).toBe(2);
    expect(pair(scheduler.pick())[0]).toBe(0);
  });
});

describe('pick: power_of_two', () => {
  test('samples two with the injected rng and takes the less loaded', () => {
    const draws = [0.0, 0.99, 0.5, 0.0];
    const rng = () => draws.shift() ?? 0;
    // Pool order is insertion order: P0 (load .5), P1 (.1), P2 (.2).
    const { scheduler } = setup([P(0, { availSlots: 50 }), P(1, { availSlots: 90 }), P(2, { availSlots: 80 }), D(10, [0, 1, 2])], {
      policy: { prefill: 'power_of_two', decode: 'power_of_two' },
      rng,
    });
    const first = scheduler.pick() as Pair;
    // Draws 0.0 → index 0 (P0), 0.99 → index 1 of the remaining two → P2: P2 is less loaded.
    expect(first.p.id).toBe(2);
    expect(first.reason).toBe('power_of_two');
    // Single D: no draw needed. Next P draws 0.5 → P1, 0.0 → P0: P1 wins.
    expect(pair(scheduler.pick())[0]).toBe(1);
  });

  test('falls back to load order when neither sample fits', () => {
    const { scheduler } = setup([P(0, { availSlots: 50 }), P(1, { availSlots: 90 }), P(2, { availSlots: 80 }), D(10, [0, 1, 2])], {
      policy: { prefill: 'power_of_two' },
      rng: () => 0,
    });
    const result = scheduler.pick({ excludeP: new Set([0, 1]) }) as Pair;
    expect(result.p.id).toBe(2);
    expect(result.reason).toBe('least_load');
  });

  test('an rng returning 1 (out of contract) still indexes inside the pool', () => {
    const { scheduler } = setup([P(0), P(1), D(10, [0, 1])], { policy: { prefill: 'power_of_two' }, rng: () => 1 });
    expect(scheduler.pick().ok).toBe(true);
  });
});

describe('options and request checks', () => {
  const cases: [string, Partial<SchedulerOptions>][] = [
    ['policy.prefill', { policy: { prefill: 'fastest' as never } }],
    ['policy.decode', { policy: { decode: 'cache_affinity' } }],
    ['blockSize', { blockSize: 0 }],
    ['blockSize', { blockSize: 1.5 }],
    ['rng', { rng: 3 as never }],
    ['cluster', { cluster: {} as never }],
  ];
  test.each(cases)('rejects a bad option, naming %s', (path, options) => {
    let caught: unknown;
    try {
      createScheduler({ cluster: new TestCluster(), ...options });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PdlinkError);
    expect((caught as PdlinkError).issues[0]?.path).toBe(path);
  });

  test('cache_affinity on decode is refused with the reason', () => {
    expect(() => createScheduler({ cluster: new TestCluster(), policy: { decode: 'cache_affinity' } })).toThrow(
      'policy.decode: cache_affinity applies to prefill only; use one of load_balance, round_robin, power_of_two, precise_prefix',
    );
  });

  const requests: [string, unknown][] = [
    ['request', null],
    ['promptTokens', { promptTokens: 'abc' }],
    ['promptText', { promptText: 5 }],
    ['promptBlocks', { promptBlocks: -1 }],
    ['promptBlocks', { promptBlocks: 1.5 }],
    ['excludeP', { excludeP: [1] }],
    ['excludeD', { excludeD: 'x' }],
  ];
  test.each(requests)('rejects a bad request, naming %s', (path, request) => {
    const { scheduler } = setup([P(0), D(10, [0])]);
    let caught: unknown;
    try {
      scheduler.pick(request as never);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PdlinkError);
    expect((caught as PdlinkError).code).toBe('bad_request');
    expect((caught as PdlinkError).issues[0]?.path).toBe(path);
  });

  test('close() stops following the cluster', () => {
    const { scheduler, cluster } = setup([P(0), D(10, [0])]);
    scheduler.close();
    cluster.refresh([]);
    expect(scheduler.counts().prefill).toBe(1);
  });
});

describe('pickDecode: another D for a P that already answered', () => {
  test('only D’s linked to that P, never the excluded ones', () => {
    const { scheduler } = setup([P(0), P(1), D(10, [0, 1]), D(11, [1]), D(12, [0], { availSlots: 50 })]);
    expect(pair(scheduler.pickDecode(0, { excludeD: new Set([10]) }))).toEqual([0, 12]);
    expect(failure(scheduler.pickDecode(0, { excludeD: new Set([10, 12]) })).reason).toBe('excluded');
    expect(failure(scheduler.pickDecode(5)).reason).toBe('no_prefill');
  });

  test('P’s own open circuit does not matter; an open D gets one early trial', () => {
    const { scheduler, health } = setup([P(0), D(10, [0]), D(11, [0])]);
    health.recordFailure(0);
    health.recordFailure(11);
    expect(pair(scheduler.pickDecode(0, { excludeD: new Set([10]) }))).toEqual([0, 11]);
    expect(health.state(11)).toBe('half_open');
    expect(health.admissible(11)).toBe(false);
    expect(health.state(0)).toBe('open');
    expect(failure(scheduler.pickDecode(0, { excludeD: new Set([10]) })).reason).toBe('excluded');
  });

  test('a capped D is passed over', () => {
    const { scheduler, loads } = setup([P(0), D(10, [0]), D(11, [0])], { maxRequestsPerInstance: 1 });
    loads.reserve(11, 1, 0);
    expect(failure(scheduler.pickDecode(0, { excludeD: new Set([10]) })).reason).toBe('instance_cap');
  });
});

describe('pick: conditional disaggregation', () => {
  const tokens = (n: number) => Array.from({ length: n }, (_, i) => i % 1000);

  test('off by default: every pair is disaggregated, however short the prompt', () => {
    const { scheduler } = setup([P(0), D(10, [0])]);
    const result = scheduler.pick({ promptTokens: tokens(1) }) as Pair;
    expect(result.path).toBeUndefined();
  });

  test('local exactly when the prompt is at most max_local_prefill_length tokens', () => {
    const { scheduler } = setup([P(0), D(10, [0])], { localPrefill: { maxLocalPrefillLength: 64 } });
    expect((scheduler.pick({ promptTokens: tokens(64) }) as Pair).path).toBe('local');
    expect((scheduler.pick({ promptTokenCount: 64, promptText: 'x' }) as Pair).path).toBe('local');
    expect((scheduler.pick({ promptTokens: tokens(65) }) as Pair).path).toBeUndefined();
    // Unknown length: never local by length.
    expect((scheduler.pick({ promptText: 'x' }) as Pair).path).toBeUndefined();
  });

  test('the part cache affinity knows P holds does not count as uncached', () => {
    const { scheduler } = setup([P(0), D(10, [0])], {
      policy: { prefill: 'cache_affinity' },
      blockSize: 16,
      localPrefill: { maxLocalPrefillLength: 16 },
    });
    const first = { promptTokens: tokens(64) };
    expect((scheduler.pick(first) as Pair).path).toBeUndefined();
    scheduler.recordPrefill(0, first);
    // 64 tokens share their first 64 with the recorded prompt: 4 blocks matched, 16 uncached.
    expect((scheduler.pick({ promptTokens: tokens(80) }) as Pair).path).toBe('local');
    expect((scheduler.pick({ promptTokens: tokens(81) }) as Pair).path).toBeUndefined();
  });

  test('local exactly when every P holds more than max_prefill_queue_size requests', () => {
    const { scheduler, loads } = setup([P(0, { availSlots: 100 }), P(1, { availSlots: 100 }), D(10, [0, 1])], {
      localPrefill: { maxPrefillQueueSize: 2 },
    });
    loads.reserve(0, 3, 0);
    loads.reserve(1, 2, 0);
    expect((scheduler.pick({ promptTokens: tokens(500) }) as Pair).path).toBeUndefined();
    loads.reserve(1, 1, 0);
    expect((scheduler.pick({ promptTokens: tokens(500) }) as Pair).path).toBe('local');
  });

  test('a bad promptTokenCount is refused naming the field', () => {
    const { scheduler } = setup([P(0), D(10, [0])]);
    expect(() => scheduler.pick({ promptTokenCount: -1 })).toThrow(/promptTokenCount/);
  });
});
