import { describe, expect, test } from 'bun:test';
import * as fc from 'fast-check';
import type { EventBatch, KvEvent } from './events.ts';
import { MatchResult } from './kv-index.ts';
import { KvState, noBatchCounts, type SourceSpec } from './kv-state.ts';

const BS = 2;
const spec = (instance: string, extra: Partial<SourceSpec> = {}): SourceSpec => ({
  instance,
  dpRank: 0,
  tenant: 'default',
  model: 'm',
  blockSize: BS,
  lora: '',
  salt: '',
  ...extra,
});
const h = (...ids: number[]): Uint32Array => Uint32Array.from(ids.flatMap((id) => [0, id]));
const stored = (hashes: number[], parent: number | undefined, tokens: number[], medium = 'GPU'): KvEvent => ({
  kind: 'stored',
  hashes: h(...hashes),
  parent: parent === undefined ? undefined : h(parent),
  tokens: Uint32Array.from(tokens),
  blockSize: BS,
  medium,
  loraId: undefined,
  loraName: undefined,
});
const batch = (...events: KvEvent[]): EventBatch => ({ ts: 0, events, dpRank: undefined, unknownEvents: 0 });

/** Depth matched per instance for a prompt. */
function depths(state: KvState, tokens: number[], model = 'm'): Record<string, number> {
  const keys = new Uint32Array(2 * tokens.length);
  const n = state.hasher.keys(tokens, BS, keys);
  const ns = state.namespace(model, BS, '', '', false);
  const result = new MatchResult();
  if (ns >= 0) state.index.match(ns, keys, n, result);
  const out: Record<string, number> = {};
  for (let i = 0; i < result.count; i++) out[state.source(result.sources[i]!)!.instance] = result.depth[i]!;
  return out;
}

describe('KvState', () => {
  test('a chain stored in two events matches as one prefix; keys depend on tokens, not engine hashes', () => {
    const state = new KvState();
    const a = state.addSource(spec('a'));
    const b = state.addSource(spec('b'));
    const counts = noBatchCounts();
    state.apply(a, batch(stored([1, 2], undefined, [1, 2, 3, 4]), stored([3], 2, [5, 6])), counts);
    // b names the same content with other hashes, in one event.
    state.apply(b, batch(stored([70, 80], undefined, [1, 2, 3, 4])), counts);
    expect(counts).toMatchObject({ stored: 5, orphans: 0 });
    expect(depths(state, [1, 2, 3, 4, 5, 6, 7])).toEqual({ a: 3, b: 2 });
    expect(depths(state, [1, 2, 9, 9])).toEqual({ a: 1, b: 1 });
    expect(depths(state, [9, 9])).toEqual({});
    expect([state.index.held, state.index.blocks]).toEqual([5, 3]);
  });

  test('removal by engine hash, clear, orphans, and a re-store that is a no-op', () => {
    const state = new KvState();
    const a = state.addSource(spec('a'));
    const counts = noBatchCounts();
    state.apply(a, batch(stored([1, 2], undefined, [1, 2, 3, 4]), stored([1], undefined, [1, 2])), counts);
    expect(counts.stored).toBe(2);
    state.apply(a, batch({ kind: 'removed', hashes: h(2, 99), medium: 'GPU' }), counts);
    expect([counts.removed, counts.unknownRemovals]).toEqual([1, 1]);
    expect(depths(state, [1, 2, 3, 4])).toEqual({ a: 1 });
    state.apply(a, batch(stored([5], 42, [7, 8])), counts);
    expect(counts.orphans).toBe(1);
    state.apply(a, batch({ kind: 'cleared' }), counts);
    expect([counts.cleared, state.index.held]).toEqual([1, 0]);
  });

  test('media are a union for matching; a removal names its medium', () => {
    const state = new KvState();
    const a = state.addSource(spec('a'));
    const counts = noBatchCounts();
    state.apply(a, batch(stored([1], undefined, [1, 2]), stored([2], 1, [3, 4], 'CPU')), counts);
    expect(depths(state, [1, 2, 3, 4])).toEqual({ a: 2 });
    state.apply(a, batch({ kind: 'removed', hashes: h(2), medium: 'GPU' }), counts);
    expect(counts.unknownRemovals).toBe(1);
    state.apply(a, batch({ kind: 'removed', hashes: h(2), medium: 'CPU' }), counts);
    expect(depths(state, [1, 2, 3, 4])).toEqual({ a: 1 });
    expect(state.mediumName(1)).toBe('CPU');
  });

  test('models are separate namespaces; removing a source forgets its blocks and frees its id', () => {
    const state = new KvState();
    const a = state.addSource(spec('a'));
    const b = state.addSource(spec('b', { model: 'other' }));
    const counts = noBatchCounts();
    state.apply(a, batch(stored([1], undefined, [1, 2])), counts);
    state.apply(b, batch(stored([1], undefined, [1, 2])), counts);
    expect(depths(state, [1, 2])).toEqual({ a: 1 });
    expect(depths(state, [1, 2], 'other')).toEqual({ b: 1 });
    state.removeSource(a);
    expect(depths(state, [1, 2])).toEqual({});
    expect(state.addSource(spec('c'))).toBe(a);
    expect(state.addSource(spec('c'))).toBe(a);
  });
});

describe('KvState against a model of the engines', () => {
  // Engines hold prefixes of a few conversations; each op stores a prefix's missing blocks (as an
  // engine does, chaining to the deepest block it holds), evicts a held leaf, or clears.
  const op = fc.oneof(
    fc.record({ kind: fc.constant('store' as const), src: fc.nat(3), conv: fc.nat(4), depth: fc.integer({ min: 1, max: 6 }) }),
    fc.record({ kind: fc.constant('evict' as const), src: fc.nat(3), pick: fc.nat(50) }),
    fc.record({ kind: fc.constant('clear' as const), src: fc.nat(3) }),
  );
  const conversation = (c: number, depth: number): number[] => Array.from({ length: depth * BS }, (_, i) => (i < 2 * BS ? i : c * 100 + i));
  const id = (c: number, d: number): string => conversation(c, d).join(',');

  test('after any run of events the index answers every prompt as the model does', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const state = new KvState();
        const sources = [0, 1, 2, 3].map((i) => state.addSource(spec(`s${i}`)));
        const held = sources.map(() => new Map<string, number>()); // prefix id → engine hash
        let nextHash = 1;
        const counts = noBatchCounts();
        for (const o of ops) {
          const mine = held[o.src]!;
          if (o.kind === 'store') {
            let have = 0;
            while (have < o.depth && mine.has(id(o.conv, have + 1))) have++;
            if (have === o.depth) continue;
            const hashes: number[] = [];
            for (let d = have + 1; d <= o.depth; d++) {
              hashes.push(nextHash);
              mine.set(id(o.conv, d), nextHash++);
            }
            const tokens = conversation(o.conv, o.depth).slice(have * BS);
            const parent = have === 0 ? undefined : mine.get(id(o.conv, have));
            state.apply(sources[o.src]!, batch(stored(hashes, parent, tokens)), counts);
          } else if (o.kind === 'evict') {
            // Evict a leaf: a held prefix with no held extension.
            const leaves = [...mine.keys()].filter(
              (k) => ![...mine.keys()].some((other) => other.length > k.length && other.startsWith(`${k},`)),
            );
            if (leaves.length === 0) continue;
            const leaf = leaves[o.pick % leaves.length]!;
            state.apply(sources[o.src]!, batch({ kind: 'removed', hashes: h(mine.get(leaf)!), medium: 'GPU' }), counts);
            mine.delete(leaf);
          } else {
            state.apply(sources[o.src]!, batch({ kind: 'cleared' }), counts);
            mine.clear();
          }
        }
        expect(counts.orphans + counts.unknownRemovals + counts.full).toBe(0);
        expect(state.index.held).toBe(held.reduce((n, m) => n + m.size, 0));
        for (let c = 0; c < 5; c++) {
          const want: Record<string, number> = {};
          held.forEach((mine, s) => {
            let d = 0;
            while (d < 6 && mine.has(id(c, d + 1))) d++;
            if (d > 0) want[`s${s}`] = d;
          });
          expect(depths(state, conversation(c, 6))).toEqual(want);
        }
      }),
      { numRuns: 300 },
    );
  });
});
