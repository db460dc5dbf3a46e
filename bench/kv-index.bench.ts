/**
 * One question: what does routing on the engines' own KV events cost pdlink? On one thread: how
 * many engine events (and blocks) the index applies per second, how many prompt lookups it answers
 * per second, how many bytes a held block takes, what a request's scheduling costs with
 * precise_prefix against round_robin, and what XXH3 costs per block here against the npm
 * implementations (when installed where KV_BENCH_LIBS points: `npm install hash-wasm @node-rs/xxhash`
 * in a scratch directory). Goals: ≥ 2 M events/s applied and ≥ 2 M lookups/s; ≤ 64 B per held block.
 *
 * Set-up: bench/kv-trace.ts (the Mooncake conversation trace's blocks spread round robin on 256
 * instances, events decoded in advance). Rates are CPU time of this process (process.cpuUsage), not
 * wall time: the machine is shared, and a rate in wall time measured how busy it was. Baselines of
 * the same run: stored blocks against XXH3-keying the same blocks and nothing else (the floor of an
 * index keyed so), the pick against round_robin's; rounds alternate which goes first; figures are
 * medians over rounds.
 *
 * Run: taskset -c 1 node_modules/.bin/bun bench/kv-index.bench.ts   (--quick: 2000 requests, nothing written)
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MatchResult } from '../src/kv/kv-index.ts';
import { KvState, noBatchCounts } from '../src/kv/kv-state.ts';
import { xxh3Words } from '../src/kv/xxh3.ts';
import { NativeXxh3 } from '../src/kv/xxh3-native.ts';
import { createScheduler } from '../src/scheduler/scheduler.ts';
import { TestCluster, type TestInstanceSpec } from '../test/doubles/cluster.ts';
import { traceEvents } from './kv-trace.ts';
import { markdownTable, spread, writeResults } from './lib.ts';

const QUICK = process.argv.includes('--quick');
const BLOCK_TOKENS = Number(process.env['KV_BENCH_BLOCK_TOKENS'] ?? '64');
const INSTANCES = 256;
const ROUNDS = QUICK ? 1 : 3;
const trace = traceEvents(BLOCK_TOKENS, INSTANCES, QUICK ? 2000 : undefined);
const { prompts, stored, removed, blocks: totalBlocks } = trace;
console.log(
  `kv-index bench: ${trace.requests} requests, ${stored.length} BlockStored events, ${totalBlocks} blocks of ${BLOCK_TOKENS} tokens`,
);

/** CPU milliseconds this process has used. */
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const timed = (work: () => void): number => {
  const t = cpuMs();
  work();
  return cpuMs() - t;
};

function newState(): { state: KvState; sources: number[] } {
  const state = new KvState({ maxRecords: 32 * 1024 * 1024 });
  const sources = Array.from({ length: INSTANCES }, (_, i) =>
    state.addSource({ instance: String(1000 + i), dpRank: 0, tenant: 'default', model: 'm', blockSize: BLOCK_TOKENS, lora: '', salt: '' }),
  );
  return { state, sources };
}

interface Round {
  /** Blocks stored into an empty index that grows as it fills. */
  firstFillBlocksPerS: number;
  storeEventsPerS: number;
  storeBlocksPerS: number;
  /** Blocks only keyed (XXH3 of the tokens, chained), as the store does before indexing. */
  keyOnlyBlocksPerS: number;
  removeBlocksPerS: number;
  lookupsPerS: number;
  probesPerS: number;
  keyAndLookupPerS: number;
  heldBlocks: number;
  distinctBlocks: number;
  bytesPerHeld: number;
  rssPerHeld: number;
}

function keyOnly(state: KvState): void {
  const keys = new Uint32Array(2 * (trace.prompts.reduce((n, p) => Math.max(n, p.length), 0) / BLOCK_TOKENS));
  for (const { batch } of stored) {
    const event = batch.events[0] as { tokens: Uint32Array; hashes: Uint32Array };
    state.hasher.chain(event.tokens, 0, event.hashes.length / 2, BLOCK_TOKENS, keys, 0);
  }
}

function round(r: number): Round {
  const rssBefore = process.memoryUsage().rss;
  const { state, sources } = newState();
  const counts = noBatchCounts();
  const storeAll = (): number =>
    timed(() => {
      for (const { instance, batch } of stored) state.apply(sources[instance]!, batch, counts);
    });
  const removeAll = (): number =>
    timed(() => {
      for (const { instance, batch } of removed) state.apply(sources[instance]!, batch, counts);
    });
  // The first fill grows every array and table (copies, fresh pages); then the index is emptied and
  // filled again at its size, as a running Coordinator's index churns: that is the rate to compare.
  const firstFillMs = storeAll();
  const heldBlocks = state.index.held;
  const bytesPerHeld = state.index.bytes / heldBlocks;
  const rssPerHeld = (process.memoryUsage().rss - rssBefore) / heldBlocks;
  removeAll();
  let keyMs = 0;
  if (r % 2 === 1) keyMs = timed(() => keyOnly(state));
  const storeMs = storeAll();
  if (r % 2 === 0) keyMs = timed(() => keyOnly(state));
  if (counts.orphans + counts.full > 0 || state.index.held !== heldBlocks) throw new Error(`blocks not indexed: ${JSON.stringify(counts)}`);
  // Lookups: every prompt's keys in advance, then the matches alone; then keys and match together.
  const ns = state.namespace('m', BLOCK_TOKENS, '', '', false);
  const keys = prompts.map((p) => {
    const k = new Uint32Array((2 * p.length) / BLOCK_TOKENS);
    state.hasher.keys(p, BLOCK_TOKENS, k);
    return k;
  });
  const result = new MatchResult();
  let probes = 0;
  const lookupMs = timed(() => {
    for (const k of keys) probes += state.index.match(ns, k, k.length / 2, result) + 1;
  });
  const scratch = new Uint32Array(Math.max(...keys.map((k) => k.length)));
  const keyLookupMs = timed(() => {
    for (const p of prompts) state.index.match(ns, scratch, state.hasher.keys(p, BLOCK_TOKENS, scratch), result);
  });
  const distinctBlocks = state.index.blocks;
  const removeMs = removeAll();
  if (state.index.held !== 0) throw new Error(`${state.index.held} blocks left after removing all`);
  const perS = (n: number, ms: number): number => n / (ms / 1000);
  return {
    firstFillBlocksPerS: perS(totalBlocks, firstFillMs),
    storeEventsPerS: perS(stored.length, storeMs),
    storeBlocksPerS: perS(totalBlocks, storeMs),
    keyOnlyBlocksPerS: perS(totalBlocks, keyMs),
    removeBlocksPerS: perS(totalBlocks, removeMs),
    lookupsPerS: perS(prompts.length, lookupMs),
    probesPerS: perS(probes, lookupMs),
    keyAndLookupPerS: perS(prompts.length, keyLookupMs),
    heldBlocks,
    distinctBlocks,
    bytesPerHeld,
    rssPerHeld,
  };
}

/** CPU µs of one pick on 256 P: precise_prefix (the prompt keyed and matched) and round_robin, alternating. */
function pickCosts(): { precise: number[]; roundRobin: number[] } {
  const specs: TestInstanceSpec[] = [];
  for (let i = 0; i < INSTANCES; i++) specs.push({ id: 1000 + i, role: 'prefill', blockSize: BLOCK_TOKENS, totalBlocks: 1 << 20 });
  const pIds = specs.map((s) => s.id);
  for (let i = 0; i < 16; i++) specs.push({ id: 5000 + i, role: 'decode', peers: pIds, blockSize: BLOCK_TOKENS, totalBlocks: 1 << 20 });
  const { state, sources } = newState();
  const counts = noBatchCounts();
  for (const { instance, batch } of stored) state.apply(sources[instance]!, batch, counts);
  const make = (prefill: 'precise_prefix' | 'round_robin') =>
    createScheduler({
      cluster: new TestCluster(specs),
      policy: { prefill, decode: 'load_balance' },
      blockSize: BLOCK_TOKENS,
      kv: { state },
    });
  const precise = make('precise_prefix');
  const rr = make('round_robin');
  // As the proxy hands them over: token ids parsed from JSON, one array per request.
  const sample = prompts.slice(0, 2000).map((p) => Array.from(p));
  const time = (s: ReturnType<typeof make>): number =>
    (timed(() => sample.forEach((p) => s.pick({ promptTokens: p }))) * 1000) / sample.length;
  time(precise);
  time(rr);
  const out = { precise: [] as number[], roundRobin: [] as number[] };
  for (let r = 0; r < Math.max(3, ROUNDS); r++) {
    if (r % 2 === 0) out.precise.push(time(precise));
    out.roundRobin.push(time(rr));
    if (r % 2 === 1) out.precise.push(time(precise));
  }
  return out;
}

/** CPU ns per XXH3 of one block's tokens: ours, and the npm implementations when installed. */
async function hashCost(): Promise<Record<string, number>> {
  const words = prompts[0]!.subarray(0, BLOCK_TOKENS);
  const bytes = new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
  const out = new Uint32Array(2);
  const n = 300_000;
  const measure = (fn: () => void): number => {
    for (let i = 0; i < 300_000; i++) fn();
    return Math.min(...[0, 1, 2].map(() => (timed(() => { for (let i = 0; i < n; i++) fn(); }) * 1e6) / n)); // prettier-ignore
  };
  const figures: Record<string, number> = { 'pdlink xxh3.ts': measure(() => xxh3Words(words, 0, BLOCK_TOKENS, 0, 0, out, 0)) };
  // What the index keys with on Bun: the runtime's own XXH3, the block copied to a scratch array first.
  const runtime = NativeXxh3.for(0, 0);
  if (runtime !== undefined) figures['pdlink on Bun.hash.xxHash3'] = measure(() => runtime.words(words, 0, BLOCK_TOKENS, out, 0));
  const libs = process.env['KV_BENCH_LIBS'];
  const from = (name: string): string => (libs === undefined ? name : pathToFileURL(join(libs, name)).href);
  type Wasm = {
    createXXHash3?: (a: number, b: number) => Promise<{ init(): void; update(b: Uint8Array): void; digest(f: 'binary'): Uint8Array }>;
  };
  const wasm = (await import(from('hash-wasm/dist/index.esm.js')).catch(() => import(from('hash-wasm')).catch(() => undefined))) as
    Wasm | undefined;
  if (wasm?.createXXHash3 !== undefined) {
    const h = await wasm.createXXHash3(0, 0);
    figures['hash-wasm'] = measure(() => {
      h.init();
      h.update(bytes);
      h.digest('binary');
    });
  }
  const native = (await import(from('@node-rs/xxhash/index.js')).catch(() => undefined)) as
    { xxh3?: { xxh64(b: Uint8Array, seed?: bigint): bigint } } | undefined;
  if (native?.xxh3 !== undefined) figures['@node-rs/xxhash'] = measure(() => native.xxh3!.xxh64(bytes, 0n));
  return figures;
}

const loadBefore = loadavg();
const rounds: Round[] = [];
for (let r = 0; r < ROUNDS; r++) {
  rounds.push(round(r));
  console.log(`round ${r}: ${JSON.stringify(rounds.at(-1))}`);
}
const picks = pickCosts();
const hashes = await hashCost();
const loadAfter = loadavg();
const med = (f: (r: Round) => number): number => spread(rounds.map(f)).median;
const m = (x: number): string => `${(x / 1e6).toFixed(2)} M/s`;
const pickRatio = spread(picks.precise.map((p, i) => p / picks.roundRobin[i]!)).median;
const figures = {
  firstFillBlocksPerS: med((r) => r.firstFillBlocksPerS),
  storeEventsPerS: med((r) => r.storeEventsPerS),
  storeBlocksPerS: med((r) => r.storeBlocksPerS),
  keyOnlyBlocksPerS: med((r) => r.keyOnlyBlocksPerS),
  storeVsKeyOnly: med((r) => r.storeBlocksPerS / r.keyOnlyBlocksPerS),
  removeBlocksPerS: med((r) => r.removeBlocksPerS),
  lookupsPerS: med((r) => r.lookupsPerS),
  probesPerS: med((r) => r.probesPerS),
  keyAndLookupPerS: med((r) => r.keyAndLookupPerS),
  heldBlocks: rounds[0]!.heldBlocks,
  distinctBlocks: rounds[0]!.distinctBlocks,
  bytesPerHeld: med((r) => r.bytesPerHeld),
  rssPerHeld: med((r) => r.rssPerHeld),
  pickPreciseUs: spread(picks.precise).median,
  pickRoundRobinUs: spread(picks.roundRobin).median,
  pickRatio,
};
const promptTokens = prompts.reduce((n, p) => n + p.length, 0) / prompts.length;
const met = (ok: boolean): string => (ok ? 'met' : 'NOT MET');
const summary = [
  `Load average while measuring: ${loadBefore.map((x) => x.toFixed(1)).join(' / ')} before, ${loadAfter.map((x) => x.toFixed(1)).join(' / ')} after (1/5/15 min), 2 cores shared with other runs; rates are this process's CPU time, so contention inflates them less than wall time would (cache and core sharing still do).`,
  `${trace.requests} requests of the Mooncake conversation trace in ${BLOCK_TOKENS}-token blocks on ${INSTANCES} instances: ${figures.heldBlocks.toLocaleString('en')} held blocks (${figures.distinctBlocks.toLocaleString('en')} distinct); one thread; median of ${ROUNDS} rounds.`,
  `Events applied: ${m(figures.storeEventsPerS)} BlockStored events (each ${(totalBlocks / stored.length).toFixed(0)} blocks: ${m(figures.storeBlocksPerS)} blocks, ${figures.storeVsKeyOnly.toFixed(2)}× the rate of XXH3-keying them alone, ${m(figures.keyOnlyBlocksPerS)}) and ${m(figures.removeBlocksPerS)} removed blocks, into an index at its size (filled once and emptied); the first fill, growing every array, stored ${m(figures.firstFillBlocksPerS)}. Goal ≥ 2 M/s: ${met(figures.storeBlocksPerS >= 2e6)} for stored blocks, ${met(figures.removeBlocksPerS >= 2e6)} for removed blocks.`,
  `Lookups: ${m(figures.probesPerS)} block probes (${m(figures.lookupsPerS)} whole prompts of ${(promptTokens / BLOCK_TOKENS).toFixed(0)} blocks, keys given; goal ≥ 2 M/s: ${met(figures.probesPerS >= 2e6)} for probes), ${(figures.keyAndLookupPerS / 1e3).toFixed(2)} k/s prompts keyed from their tokens and matched.`,
  `Memory: ${figures.bytesPerHeld.toFixed(1)} B per held block in the index's arrays at this fill (goal ≤ 64 B: ${met(figures.bytesPerHeld <= 64)}); the process grew ${figures.rssPerHeld.toFixed(1)} B per held block while filling it.`,
  `Scheduling one request (${promptTokens.toFixed(0)} prompt tokens on average, given as ids) on ${INSTANCES} P: precise_prefix ${figures.pickPreciseUs.toFixed(1)} µs CPU against round_robin ${figures.pickRoundRobinUs.toFixed(1)} µs (${pickRatio.toFixed(1)}×).`,
  `XXH3 of one ${BLOCK_TOKENS}-token block (CPU ns): ${Object.entries(hashes)
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join(', ')}.`,
].join('\n\n');
console.log(summary);
if (!QUICK) {
  writeResults('kv-index', {
    json: {
      blockTokens: BLOCK_TOKENS,
      instances: INSTANCES,
      requests: trace.requests,
      events: stored.length,
      blocks: totalBlocks,
      load: { before: loadBefore, after: loadAfter },
      figures,
      picksUs: picks,
      xxh3Ns: hashes,
      rounds,
    },
    markdownTable: markdownTable(
      ['figure', 'value', 'goal'],
      [
        ['stored blocks applied', `${m(figures.storeBlocksPerS)} (${figures.storeVsKeyOnly.toFixed(2)}× keying alone)`, '≥ 2 M/s'],
        ['BlockStored events applied', m(figures.storeEventsPerS), ''],
        ['stored blocks, first fill (arrays growing)', m(figures.firstFillBlocksPerS), ''],
        ['removed blocks applied', m(figures.removeBlocksPerS), '≥ 2 M/s'],
        ['block probes (keys given)', m(figures.probesPerS), '≥ 2 M/s'],
        ['prompt lookups (keys given)', m(figures.lookupsPerS), ''],
        ['prompts keyed and looked up', `${(figures.keyAndLookupPerS / 1e3).toFixed(2)} k/s`, ''],
        ['held blocks (distinct)', `${figures.heldBlocks.toLocaleString('en')} (${figures.distinctBlocks.toLocaleString('en')})`, '≥ 1 M'],
        ['bytes per held block (index arrays)', figures.bytesPerHeld.toFixed(1), '≤ 64'],
        ['RSS growth per held block', figures.rssPerHeld.toFixed(1), ''],
        [
          'pick µs: precise_prefix / round_robin',
          `${figures.pickPreciseUs.toFixed(1)} / ${figures.pickRoundRobinUs.toFixed(1)} (${pickRatio.toFixed(1)}×)`,
          '',
        ],
        ...Object.entries(hashes).map(([k, v]) => [`XXH3 ns per ${BLOCK_TOKENS}-token block: ${k}`, v.toFixed(0), '']),
      ],
    ),
    summary,
  });
}
