/**
 * One question: what does routing on the engines' own KV events cost pdlink? On one thread: how
 * many engine events (and blocks) the index applies per second, how many prompt lookups it answers
 * per second, how many bytes a held block takes, what a request's scheduling costs with
 * precise_prefix against round_robin, and what XXH3 costs per block here against the npm
 * implementations when they are installed beside (`npm install --no-save hash-wasm @node-rs/xxhash`).
 * Goals: ≥ 2 M events/s applied and ≥ 2 M lookups/s; ≤ 64 B per held block.
 *
 * Set-up: the Mooncake conversation trace (12 031 requests, 512-token hash blocks), each hash block
 * turned into BLOCK_TOKENS-token engine blocks of deterministic token ids, requests spread round
 * robin on 256 instances, each instance storing what its requests bring that it does not hold yet
 * (one BlockStored per request, chained to the deepest block it holds), decoded events built in
 * advance so the figures are the index's own work. Lookups are the trace's prompts against the
 * filled index. Rounds alternate; the figures are medians over rounds.
 *
 * Run: taskset -c 1 node_modules/.bin/bun bench/kv-index.bench.ts   (--quick: 2000 requests, nothing written)
 */
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { EventBatch, KvEvent } from '../src/kv/events.ts';
import { MatchResult } from '../src/kv/kv-index.ts';
import { KvState, noBatchCounts } from '../src/kv/kv-state.ts';
import { xxh3Words } from '../src/kv/xxh3.ts';
import { createScheduler } from '../src/scheduler/scheduler.ts';
import { TestCluster, type TestInstanceSpec } from '../test/doubles/cluster.ts';
import { markdownTable, spread, writeResults } from './lib.ts';

const QUICK = process.argv.includes('--quick');
const BLOCK_TOKENS = Number(process.env['KV_BENCH_BLOCK_TOKENS'] ?? '64');
const INSTANCES = 256;
const ROUNDS = QUICK ? 1 : 3;
const REQUESTS = QUICK ? 2000 : Number.MAX_SAFE_INTEGER;
const TRACE = [process.env['PDLINK_TRACES'], join(import.meta.dir, '..', '..', 'shared', 'traces')]
  .filter((d): d is string => d !== undefined)
  .map((d) => join(d, 'mooncake_conversation_trace.jsonl'))
  .find((f) => existsSync(f));
if (TRACE === undefined) {
  console.error('kv-index bench: mooncake_conversation_trace.jsonl not found (set PDLINK_TRACES)');
  process.exit(1);
}

const rows = readFileSync(TRACE, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .slice(0, REQUESTS)
  .map((l) => JSON.parse(l) as { hash_ids: number[] });
const PER_TRACE_BLOCK = 512 / BLOCK_TOKENS;

/** Token ids of one engine block: a function of its trace hash block and its place in it. */
function blockTokens(hash: number, part: number, out: Uint32Array, at: number): void {
  for (let i = 0; i < BLOCK_TOKENS; i++)
    out[at + i] = (Math.imul(hash + 1, 2654435761) ^ Math.imul(part * BLOCK_TOKENS + i + 7, 40503)) >>> (0 % 151_936);
}

function promptTokens(hashes: readonly number[]): Uint32Array {
  const out = new Uint32Array(hashes.length * 512);
  hashes.forEach((h, b) => {
    for (let p = 0; p < PER_TRACE_BLOCK; p++) blockTokens(h, p, out, (b * PER_TRACE_BLOCK + p) * BLOCK_TOKENS);
  });
  return out;
}

// What each instance stores: per request, the engine blocks past the deepest trace prefix it holds.
const held = Array.from({ length: INSTANCES }, () => new Set<string>());
const counters = new Uint32Array(INSTANCES);
const engineOf = Array.from({ length: INSTANCES }, () => new Map<string, number>());
const storedEvents: { instance: number; event: KvEvent }[] = [];
const prompts: Uint32Array[] = [];
rows.forEach((row, r) => {
  const instance = r % INSTANCES;
  const mine = held[instance]!;
  let have = 0;
  let prefix = '';
  const prefixes: string[] = [];
  for (const h of row.hash_ids) prefixes.push((prefix += `${h},`));
  while (have < prefixes.length && mine.has(prefixes[have]!)) have++;
  const tokens = promptTokens(row.hash_ids);
  prompts.push(tokens);
  if (have === prefixes.length) return;
  const blocks = (prefixes.length - have) * PER_TRACE_BLOCK;
  const hashes = new Uint32Array(2 * blocks);
  for (let i = 0; i < blocks; i++) {
    hashes[2 * i] = instance;
    hashes[2 * i + 1] = ++counters[instance]!;
  }
  const parentEngine = have === 0 ? undefined : engineOf[instance]!.get(prefixes[have - 1]!);
  for (let t = have; t < prefixes.length; t++) {
    mine.add(prefixes[t]!);
    engineOf[instance]!.set(prefixes[t]!, hashes[2 * ((t - have + 1) * PER_TRACE_BLOCK - 1) + 1]!);
  }
  storedEvents.push({
    instance,
    event: {
      kind: 'stored',
      hashes,
      parent: parentEngine === undefined ? undefined : Uint32Array.of(instance, parentEngine),
      tokens: tokens.subarray(have * 512),
      blockSize: BLOCK_TOKENS,
      medium: 'GPU',
      loraId: undefined,
      loraName: undefined,
    },
  });
});
const totalBlocks = storedEvents.reduce((n, e) => n + (e.event as { hashes: Uint32Array }).hashes.length / 2, 0);
console.log(
  `kv-index bench: ${rows.length} requests, ${storedEvents.length} BlockStored events, ${totalBlocks} blocks of ${BLOCK_TOKENS} tokens on ${INSTANCES} instances`,
);

const batchOf = (event: KvEvent): EventBatch => ({ ts: 0, events: [event], dpRank: undefined, unknownEvents: 0 });
const storedBatches = storedEvents.map((e) => ({ instance: e.instance, batch: batchOf(e.event) }));
const removedBatches = storedEvents.map((e) => ({
  instance: e.instance,
  batch: batchOf({ kind: 'removed', hashes: (e.event as { hashes: Uint32Array }).hashes, medium: 'GPU' }),
}));

function newState(): { state: KvState; sources: number[] } {
  const state = new KvState({ maxRecords: 32 * 1024 * 1024 });
  const sources = Array.from({ length: INSTANCES }, (_, i) =>
    state.addSource({ instance: String(1000 + i), dpRank: 0, tenant: 'default', model: 'm', blockSize: BLOCK_TOKENS, lora: '', salt: '' }),
  );
  return { state, sources };
}

interface Round {
  storeEventsPerS: number;
  storeBlocksPerS: number;
  removeBlocksPerS: number;
  lookupsPerS: number;
  probesPerS: number;
  keyAndLookupPerS: number;
  heldBlocks: number;
  bytesPerHeld: number;
  rssPerHeld: number;
}

function round(): Round {
  const rssBefore = process.memoryUsage().rss;
  const { state, sources } = newState();
  const counts = noBatchCounts();
  let t = performance.now();
  for (const { instance, batch } of storedBatches) state.apply(sources[instance]!, batch, counts);
  const storeMs = performance.now() - t;
  if (counts.orphans + counts.full > 0) throw new Error(`blocks not indexed: ${JSON.stringify(counts)}`);
  const heldBlocks = state.index.held;
  const rssPerHeld = (process.memoryUsage().rss - rssBefore) / heldBlocks;
  // Lookups: every prompt's keys in advance, then the matches alone; then keys and match together.
  const ns = state.namespace('m', BLOCK_TOKENS, '', '', false);
  const keys = prompts.map((p) => {
    const k = new Uint32Array((2 * p.length) / BLOCK_TOKENS);
    state.hasher.keys(p, BLOCK_TOKENS, k);
    return k;
  });
  const result = new MatchResult();
  let probes = 0;
  t = performance.now();
  for (const k of keys) probes += state.index.match(ns, k, k.length / 2, result) + 1;
  const lookupMs = performance.now() - t;
  const scratch = new Uint32Array(Math.max(...keys.map((k) => k.length)));
  t = performance.now();
  for (const p of prompts) state.index.match(ns, scratch, state.hasher.keys(p, BLOCK_TOKENS, scratch), result);
  const keyLookupMs = performance.now() - t;
  t = performance.now();
  for (const { instance, batch } of removedBatches) state.apply(sources[instance]!, batch, counts);
  const removeMs = performance.now() - t;
  if (state.index.held !== 0) throw new Error(`${state.index.held} blocks left after removing all`);
  return {
    storeEventsPerS: storedBatches.length / (storeMs / 1000),
    storeBlocksPerS: totalBlocks / (storeMs / 1000),
    removeBlocksPerS: totalBlocks / (removeMs / 1000),
    lookupsPerS: prompts.length / (lookupMs / 1000),
    probesPerS: probes / (lookupMs / 1000),
    keyAndLookupPerS: prompts.length / (keyLookupMs / 1000),
    heldBlocks,
    bytesPerHeld: 0,
    rssPerHeld,
  };
}

/** Bytes per held block of a full index, from its own arrays (no doubling slack from a partial fill). */
function indexBytes(): { bytes: number; held: number } {
  const { state, sources } = newState();
  const counts = noBatchCounts();
  for (const { instance, batch } of storedBatches) state.apply(sources[instance]!, batch, counts);
  return { bytes: state.index.bytes, held: state.index.held };
}

/** Scheduling cost of one request: precise_prefix (the prompt keyed and matched) against round_robin. */
function pickCost(): { precise: number; roundRobin: number } {
  const specs: TestInstanceSpec[] = [];
  for (let i = 0; i < INSTANCES; i++) specs.push({ id: 1000 + i, role: 'prefill', blockSize: BLOCK_TOKENS, totalBlocks: 1 << 20 });
  for (let i = 0; i < 16; i++)
    specs.push({
      id: 5000 + i,
      role: 'decode',
      peers: specs.slice(0, INSTANCES).map((s) => s.id),
      blockSize: BLOCK_TOKENS,
      totalBlocks: 1 << 20,
    });
  const { state, sources } = newState();
  const counts = noBatchCounts();
  for (const { instance, batch } of storedBatches) state.apply(sources[instance]!, batch, counts);
  const make = (prefill: 'precise_prefix' | 'round_robin') =>
    createScheduler({
      cluster: new TestCluster(specs),
      policy: { prefill, decode: 'load_balance' },
      blockSize: BLOCK_TOKENS,
      kv: { state },
    });
  const precise = make('precise_prefix');
  const rr = make('round_robin');
  const sample = prompts.slice(0, 2000).map((p) => Array.from(p));
  const time = (s: ReturnType<typeof make>): number => {
    const t = performance.now();
    for (const p of sample) s.pick({ promptTokens: p });
    return ((performance.now() - t) * 1000) / sample.length;
  };
  time(precise);
  time(rr);
  return { precise: time(precise), roundRobin: time(rr) };
}

/** ns per XXH3 of one block's tokens: ours, and the npm implementations when installed. */
async function hashCost(): Promise<Record<string, number>> {
  const words = prompts[0]!.subarray(0, BLOCK_TOKENS);
  const bytes = new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
  const out = new Uint32Array(2);
  const n = 200_000;
  const measure = (fn: () => void): number => {
    for (let i = 0; i < 10_000; i++) fn();
    const t = performance.now();
    for (let i = 0; i < n; i++) fn();
    return ((performance.now() - t) * 1e6) / n;
  };
  const figures: Record<string, number> = { pdlink: measure(() => xxh3Words(words, 0, BLOCK_TOKENS, 0, 0, out, 0)) };
  const hashWasm = 'hash-wasm';
  const nodeRs = '@node-rs/xxhash';
  const wasm = (await import(hashWasm).catch(() => undefined)) as
    | { createXXHash3?: (a: number, b: number) => Promise<{ init(): void; update(b: Uint8Array): void; digest(f: 'binary'): Uint8Array }> }
    | undefined;
  if (wasm?.createXXHash3 !== undefined) {
    const h = await wasm.createXXHash3(0, 0);
    figures['hash-wasm'] = measure(() => {
      h.init();
      h.update(bytes);
      h.digest('binary');
    });
  }
  const native = (await import(nodeRs).catch(() => undefined)) as { xxh3?: { xxh64(b: Uint8Array, seed?: bigint): bigint } } | undefined;
  if (native?.xxh3 !== undefined) figures['@node-rs/xxhash'] = measure(() => native.xxh3!.xxh64(bytes, 0n));
  return figures;
}

const rounds: Round[] = [];
for (let r = 0; r < ROUNDS; r++) {
  rounds.push(round());
  console.log(`round ${r}: ${JSON.stringify(rounds.at(-1))}`);
}
const full = indexBytes();
const picks = pickCost();
const hashes = await hashCost();
const med = (f: (r: Round) => number): number => spread(rounds.map(f)).median;
const m = (x: number): string => `${(x / 1e6).toFixed(2)} M/s`;
const figures = {
  storeEventsPerS: med((r) => r.storeEventsPerS),
  storeBlocksPerS: med((r) => r.storeBlocksPerS),
  removeBlocksPerS: med((r) => r.removeBlocksPerS),
  lookupsPerS: med((r) => r.lookupsPerS),
  probesPerS: med((r) => r.probesPerS),
  keyAndLookupPerS: med((r) => r.keyAndLookupPerS),
  heldBlocks: rounds[0]!.heldBlocks,
  bytesPerHeld: full.bytes / full.held,
  rssPerHeld: med((r) => r.rssPerHeld),
};
const summary = [
  `Machine load average while measuring: ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ')} (1/5/15 min) on ${2} cores shared with other runs; absolute rates scale with it.`,
  `${rows.length} requests of the Mooncake conversation trace in ${BLOCK_TOKENS}-token blocks on ${INSTANCES} instances: ${figures.heldBlocks.toLocaleString('en')} held blocks; one thread, median of ${ROUNDS} rounds.`,
  `Events applied: ${m(figures.storeEventsPerS)} BlockStored events (${m(figures.storeBlocksPerS)} blocks, each keyed with two XXH3) and ${m(figures.removeBlocksPerS)} removed blocks (goal ≥ 2 M/s: ${figures.storeEventsPerS >= 2e6 ? 'met' : 'NOT MET'} for events, ${figures.storeBlocksPerS >= 2e6 ? 'met' : 'NOT MET'} for stored blocks).`,
  `Lookups: ${m(figures.lookupsPerS)} prompts matched from their keys (${m(figures.probesPerS)} block probes; goal ≥ 2 M/s: ${figures.lookupsPerS >= 2e6 ? 'met' : 'NOT MET'}), ${m(figures.keyAndLookupPerS)} prompts keyed from their tokens and matched.`,
  `Memory: ${figures.bytesPerHeld.toFixed(1)} B per held block in the index's arrays (goal ≤ 64 B: ${figures.bytesPerHeld <= 64 ? 'met' : 'NOT MET'}); the process grew ${figures.rssPerHeld.toFixed(1)} B per held block while filling it.`,
  `Scheduling one request on 256 P: precise_prefix ${picks.precise.toFixed(1)} µs (its prompt keyed and matched) against round_robin ${picks.roundRobin.toFixed(1)} µs: ${(picks.precise - picks.roundRobin).toFixed(1)} µs added.`,
  `XXH3 of one ${BLOCK_TOKENS}-token block: ${Object.entries(hashes)
    .map(([k, v]) => `${k} ${v.toFixed(0)} ns`)
    .join(', ')}.`,
].join('\n\n');
console.log(summary);
if (!QUICK) {
  writeResults('kv-index', {
    json: {
      blockTokens: BLOCK_TOKENS,
      instances: INSTANCES,
      requests: rows.length,
      events: storedBatches.length,
      blocks: totalBlocks,
      figures,
      picksUs: picks,
      xxh3Ns: hashes,
      rounds,
    },
    markdownTable: markdownTable(
      ['figure', 'value', 'goal'],
      [
        ['BlockStored events applied', m(figures.storeEventsPerS), '≥ 2 M/s'],
        ['stored blocks applied', m(figures.storeBlocksPerS), ''],
        ['removed blocks applied', m(figures.removeBlocksPerS), ''],
        ['prompt lookups (keys given)', m(figures.lookupsPerS), '≥ 2 M/s'],
        ['block probes', m(figures.probesPerS), ''],
        ['prompts keyed and looked up', m(figures.keyAndLookupPerS), ''],
        ['held blocks', figures.heldBlocks.toLocaleString('en'), '≥ 1 M'],
        ['bytes per held block (index arrays)', figures.bytesPerHeld.toFixed(1), '≤ 64'],
        ['RSS growth per held block', figures.rssPerHeld.toFixed(1), ''],
        ['pick µs: precise_prefix / round_robin', `${picks.precise.toFixed(1)} / ${picks.roundRobin.toFixed(1)}`, ''],
        ...Object.entries(hashes).map(([k, v]) => [`XXH3 ns per ${BLOCK_TOKENS}-token block: ${k}`, v.toFixed(0), '']),
      ],
    ),
    summary,
  });
}
