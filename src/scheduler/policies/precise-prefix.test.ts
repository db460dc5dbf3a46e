import { describe, expect, test } from 'bun:test';
import { TestCluster, type TestInstanceSpec } from '../../../test/doubles/cluster.ts';
import { TestLoads } from '../../../test/doubles/scheduler.ts';
import type { KvEvent } from '../../kv/events.ts';
import { KvState, noBatchCounts } from '../../kv/kv-state.ts';
import { createScheduler } from '../scheduler.ts';
import type { Pair, PickRequest } from '../types.ts';

const BS = 4;
const P = (id: number, extra: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({ id, role: 'prefill', blockSize: BS, ...extra });
const D = (id: number, peers: number[], extra: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({
  id,
  role: 'decode',
  peers,
  blockSize: BS,
  ...extra,
});
const prompt = (blocks: number, seed = 0): number[] => Array.from({ length: blocks * BS }, (_, i) => (i < 2 * BS ? i : seed * 1000 + i));

/** An engine's KV state as its events leave it: `id` holds the first `blocks` blocks of the prompt. */
function holds(state: KvState, id: number, tokens: number[], blocks: number): void {
  const source = state.addSource({
    instance: String(id),
    dpRank: 0,
    tenant: 'default',
    model: 'test-model',
    blockSize: BS,
    lora: '',
    salt: '',
  });
  const event: KvEvent = {
    kind: 'stored',
    hashes: Uint32Array.from(Array.from({ length: blocks }, (_, i) => [id, i + 1]).flat()),
    parent: undefined,
    tokens: Uint32Array.from(tokens.slice(0, blocks * BS)),
    blockSize: BS,
    medium: 'GPU',
    loraId: undefined,
    loraName: undefined,
  };
  state.apply(source, { ts: 0, events: [event], dpRank: undefined, unknownEvents: 0 }, noBatchCounts());
}

function setup(
  specs: TestInstanceSpec[],
  options: { decode?: 'precise_prefix' | 'load_balance'; decodeFirst?: boolean; local?: number } = {},
) {
  const state = new KvState();
  const loads = new TestLoads();
  const scheduler = createScheduler({
    cluster: new TestCluster(specs),
    loads,
    blockSize: BS,
    policy: { prefill: 'precise_prefix', decode: options.decode ?? 'precise_prefix' },
    kv: { state, decodeFirst: options.decodeFirst ?? false },
    ...(options.local === undefined ? {} : { localPrefill: { maxLocalPrefillLength: options.local } }),
  });
  const pick = (request: PickRequest) => scheduler.pick(request) as Pair;
  return { state, loads, scheduler, pick };
}

describe('precise_prefix', () => {
  const cluster = () => [P(0), P(1, { availSlots: 80 }), P(2, { availSlots: 60 }), D(10, [0, 1, 2]), D(11, [0, 1, 2], { availSlots: 90 })];

  test('no cached block anywhere: the least-loaded P and D, reason cache_miss', () => {
    const { pick } = setup(cluster());
    const pair = pick({ promptTokens: prompt(4) });
    expect([pair.p.id, pair.d.id, pair.reason, pair.matchedBlocks]).toEqual([0, 10, 'cache_miss', 0]);
  });

  test('the P whose events show the most of the prompt wins over a less-loaded one; D likewise', () => {
    const { state, pick } = setup(cluster());
    const tokens = prompt(4, 3);
    holds(state, 2, tokens, 3);
    holds(state, 1, tokens, 1);
    holds(state, 11, tokens, 4);
    const pair = pick({ promptTokens: tokens });
    expect([pair.p.id, pair.d.id, pair.reason, pair.matchedBlocks]).toEqual([2, 11, 'cache_hit', 3]);
    expect(pair.policy).toEqual({ prefill: 'precise_prefix', decode: 'precise_prefix' });
  });

  test('load weighs against the cached share: a holder that is nearly full loses to an idle one', () => {
    const { state, pick, loads } = setup(cluster());
    const tokens = prompt(4, 3);
    holds(state, 2, tokens, 1); // a quarter of the prompt cached
    loads.reserve(2, 55, 0); // P2 nearly full
    expect(pick({ promptTokens: tokens }).p.id).toBe(0);
  });

  test('a holder that cannot take the request is passed over for the next best', () => {
    const { state, pick } = setup([P(0), P(1, { availBlocks: 2 }), D(10, [0, 1])]);
    const tokens = prompt(4, 3);
    holds(state, 1, tokens, 4);
    const pair = pick({ promptTokens: tokens, promptBlocks: 3 });
    expect([pair.p.id, pair.reason]).toEqual([0, 'cache_miss']);
  });

  test('an instance without events is scored as today, from what it prefilled', () => {
    const { scheduler, pick } = setup(cluster(), { decode: 'load_balance' });
    const tokens = prompt(4, 5);
    scheduler.recordPrefill(2, { promptTokens: tokens });
    const pair = pick({ promptTokens: tokens });
    expect([pair.p.id, pair.reason]).toEqual([2, 'cache_hit']);
  });

  test('events override what pdlink recorded for an instance that publishes them', () => {
    const { state, scheduler, pick } = setup(cluster(), { decode: 'load_balance' });
    const tokens = prompt(4, 5);
    scheduler.recordPrefill(2, { promptTokens: tokens });
    holds(state, 2, prompt(1, 9), 1); // P2 publishes, and its events say it holds none of this prompt
    holds(state, 1, tokens, 2);
    expect(pick({ promptTokens: tokens }).p.id).toBe(1);
  });
});

describe('precise_prefix keys a prompt once and reads it fresh', () => {
  const cluster = () => [P(0), D(10, [0]), D(11, [0], { availSlots: 90 })];

  test("pickDecode orders D's by its own request's prompt, not by the last pick's", () => {
    const { state, scheduler, pick } = setup(cluster());
    const first = prompt(4, 1);
    const second = prompt(4, 2);
    holds(state, 10, first, 4);
    holds(state, 11, second, 4);
    expect(pick({ promptTokens: first }).d.id).toBe(10);
    const again = scheduler.pickDecode(0, { promptTokens: second }) as Pair;
    expect(again.d.id).toBe(11);
  });

  test('an array refilled with another prompt between picks is keyed anew', () => {
    const { state, pick } = setup(cluster());
    const first = prompt(4, 1);
    const second = prompt(4, 2);
    holds(state, 10, first, 4);
    holds(state, 11, second, 4);
    const buffer = [...first];
    expect(pick({ promptTokens: buffer }).d.id).toBe(10);
    buffer.splice(0, buffer.length, ...second);
    expect(pick({ promptTokens: buffer }).d.id).toBe(11);
    // The same prompt again (a retry) reads the same answer from its kept keys.
    expect(pick({ promptTokens: buffer, excludeD: new Set([10]) }).d.id).toBe(11);
  });

  test('a bad token id anywhere in the prompt is refused with its index, and nothing is kept of it', () => {
    const { state, pick } = setup(cluster());
    const tokens = prompt(4, 1);
    holds(state, 10, tokens, 4);
    const bad = [...tokens.slice(0, 9), -1, ...tokens.slice(10)];
    expect(() => pick({ promptTokens: bad })).toThrow('promptTokens[9]: must be an integer in [0, 4294967295]');
    expect(() => pick({ promptTokens: bad })).toThrow('promptTokens[9]');
    expect(pick({ promptTokens: tokens }).d.id).toBe(10);
  });
});

describe('decode-first', () => {
  const cluster = () => [P(0), P(1), D(10, [0, 1]), D(11, [0, 1], { availSlots: 90 })];

  test('D prefills locally exactly when it holds all but at most max_local_prefill_length tokens', () => {
    const { state, pick } = setup(cluster(), { decodeFirst: true, local: 2 * BS });
    const tokens = prompt(6, 4);
    holds(state, 11, tokens, 3); // 3 of 6 blocks uncached: 12 tokens > 8
    let pair = pick({ promptTokens: tokens });
    expect(pair.path).toBeUndefined();
    holds(state, 11, tokens, 4); // 2 blocks uncached: 8 tokens ≤ 8
    pair = pick({ promptTokens: tokens });
    expect([pair.path, pair.d.id, pair.p.id, pair.reason, pair.matchedBlocks]).toEqual(['local', 11, 11, 'cache_hit', 4]);
  });

  test('a D that cannot take the request is not chosen to prefill locally', () => {
    const { state, pick } = setup(cluster(), { decodeFirst: true, local: 2 * BS });
    const tokens = prompt(6, 4);
    holds(state, 11, tokens, 6);
    expect(pick({ promptTokens: tokens, excludeD: new Set([11]) }).path).toBeUndefined();
  });

  test('every P saturated: the least-loaded D prefills locally instead of the request failing', () => {
    const { pick, loads } = setup(cluster(), { decodeFirst: true, local: 0 });
    loads.reserve(0, 100, 0);
    loads.reserve(1, 100, 0);
    const pair = pick({ promptTokens: prompt(3) });
    expect([pair.ok, pair.path, pair.d.id, pair.reason]).toEqual([true, 'local', 10, 'prefill_saturated']);
  });

  test('without decode-first the same state goes through P as before', () => {
    const { state, pick } = setup(cluster(), { decodeFirst: false, local: 0 });
    const tokens = prompt(6, 4);
    holds(state, 11, tokens, 6);
    expect(pick({ promptTokens: tokens }).path).toBeUndefined();
  });
});

describe('conditional disaggregation under precise_prefix', () => {
  test("the uncached part is counted in P's own block size, whatever the scheduler's hash block", () => {
    const state = new KvState();
    const scheduler = createScheduler({
      cluster: new TestCluster([P(0), D(10, [0])]),
      policy: { prefill: 'precise_prefix', decode: 'load_balance' },
      kv: { state },
      localPrefill: { maxLocalPrefillLength: 2 * BS },
    });
    const tokens = prompt(11, 2);
    holds(state, 0, tokens, 8); // 12 tokens uncached: more than 8
    expect((scheduler.pick({ promptTokens: tokens }) as Pair).path).toBeUndefined();
    holds(state, 0, tokens, 9); // 8 uncached
    expect((scheduler.pick({ promptTokens: tokens }) as Pair).path).toBe('local');
  });
});
