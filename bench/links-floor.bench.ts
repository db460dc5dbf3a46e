/**
 * Question: how close do links through the LinkManager (worker pool, batcher, production 1 ms
 * window) come to calling the runtime directly over bun:ffi on one thread, in the same run?
 * (1) a lone link+unlink pair, one after the other — goal ≤ 1.5× direct; (2) 10,000 pairs from
 * 16 concurrent single-cluster callers, batched — goal ≥ 0.9× the direct 16-clusters-per-call rate.
 * Also: the pool hop alone (a trivial task through the same pool), to say where the rest goes.
 *
 * Run: bun bench/links-floor.bench.ts   → bench/results/links-floor.{json,md}
 */
import { LLM_STATUS } from '../src/core/llm-status.ts';
import { create, destroy, link, unlink } from '../src/ffi/runtime.ts';
import type { ClusterSpec } from '../src/ffi/layout.ts';
import { DEFAULT_POOL_THREADS } from '../src/workers/pool.ts';
import { startClientStack, startServerSide, type ClientStack, type ServerSide } from '../test/fixtures/links/stack.ts';
import { alternate, markdownTable, percentile, spread, times, writeResults } from './lib.ts';

const PAIRS = Number(process.env.LINKS_FLOOR_PAIRS ?? 10_000);
const LONE = Number(process.env.LINKS_FLOOR_LONE ?? 400);
const ROUNDS = 6;
const WINDOW_MS = 1; // the production default (README: pool.batch_window_ms)

const server: ServerSide = await startServerSide('127.0.0.2', 16, '127.0.0.3');
const specs: ClusterSpec[] = server.targets.map((t) => ({
  remoteClusterId: t.remoteClusterId,
  remoteIp: t.remote.ip,
  remotePort: t.remote.port,
  localIp: '127.0.0.3',
}));
const direct = create({ clusterId: BigInt(Date.now()) * 1000n + 7n, role: 'decoder' });
const stack: ClientStack = await startClientStack({ threads: DEFAULT_POOL_THREADS, maxBatch: 16, batchWindowMs: WINDOW_MS });

const ok = (rets: readonly number[]) => {
  if (rets.some((c) => c !== LLM_STATUS.LLM_SUCCESS)) throw new Error(`call failed: ${rets}`);
};

/** Median µs of a lone pair, direct on this thread. */
function loneDirect(): number {
  const us: number[] = [];
  for (let i = 0; i < LONE; i++) {
    const spec = specs[i % specs.length]!;
    const start = performance.now();
    ok(link(direct, [spec], 3000).rets);
    ok(unlink(direct, [spec], 3000).rets);
    us.push((performance.now() - start) * 1000);
  }
  return percentile(us, 50);
}

/** Median µs of a lone pair through the manager. */
async function loneManager(): Promise<number> {
  const us: number[] = [];
  for (let i = 0; i < LONE; i++) {
    const t = server.targets[i % server.targets.length]!;
    const start = performance.now();
    ok((await stack.manager.linkClusters([t])).rets);
    ok((await stack.manager.unlinkClusters([t])).rets);
    us.push((performance.now() - start) * 1000);
  }
  return percentile(us, 50);
}

/** Median µs of a trivial task's round trip (listing the context's links) through the same pool: the hop every runtime call pays. */
async function poolHop(): Promise<number> {
  const us: number[] = [];
  for (let i = 0; i < LONE; i++) {
    const start = performance.now();
    await stack.pool.run({ op: 'list', handle: stack.handle });
    us.push((performance.now() - start) * 1000);
  }
  return percentile(us, 50);
}

/** Pairs/s, direct, 16 clusters per call. */
function batchedDirect(pairs: number): number {
  const calls = Math.ceil(pairs / specs.length);
  const start = performance.now();
  for (let i = 0; i < calls; i++) {
    ok(link(direct, specs, 3000).rets);
    ok(unlink(direct, specs, 3000).rets);
  }
  return (calls * specs.length) / ((performance.now() - start) / 1000);
}

/** Pairs/s through the manager, 16 concurrent single-cluster callers. */
async function batchedManager(pairs: number): Promise<number> {
  const cycles = Math.ceil(pairs / server.targets.length);
  const start = performance.now();
  for (let i = 0; i < cycles; i++) {
    for (const r of await Promise.all(server.targets.map((t) => stack.manager.linkClusters([t])))) ok(r.rets);
    for (const r of await Promise.all(server.targets.map((t) => stack.manager.unlinkClusters([t])))) ok(r.rets);
  }
  return (cycles * server.targets.length) / ((performance.now() - start) / 1000);
}

try {
  // Warm both paths.
  loneDirect();
  await loneManager();
  const lone = await alternate(ROUNDS, loneDirect, loneManager);
  const hops: number[] = [];
  for (let r = 0; r < ROUNDS; r++) hops.push(await poolHop());
  const perRound = Math.ceil(PAIRS / ROUNDS);
  const batched = await alternate(
    ROUNDS,
    () => batchedDirect(perRound),
    () => batchedManager(perRound),
  );
  const loneRatio = spread(lone.ratios);
  // Rate ratio: manager / direct (higher is better).
  const rateRatio = spread(batched.ratios);
  const hop = percentile(hops, 50);
  const loneD = percentile(lone.baseline, 50);
  const loneM = percentile(lone.subject, 50);
  console.log(
    `lone pair: manager ${loneM.toFixed(0)} µs vs direct ${loneD.toFixed(0)} µs → ${times(loneRatio.median)} (rounds ${lone.ratios.map(times).join(', ')})`,
  );
  console.log(`pool hop (trivial task): ${hop.toFixed(0)} µs`);
  console.log(`batched: ${times(rateRatio.median)} of the direct 16-per-call rate (rounds ${batched.ratios.map(times).join(', ')})`);
  const summary = [
    `Lone link+unlink pair through the LinkManager (pool of ${DEFAULT_POOL_THREADS} threads, ${WINDOW_MS} ms batch window): ${loneM.toFixed(0)} µs median, ` +
      `${times(loneRatio.median)} a direct bun:ffi pair on the main thread (${loneD.toFixed(0)} µs); p10 ${times(loneRatio.p10)}, p90 ${times(loneRatio.p90)} over ${ROUNDS} alternating rounds of ${LONE} pairs; goal ≤ 1.5×: ${loneRatio.median <= 1.5 ? 'met' : 'not met'}. ` +
      `The manager adds ${(loneM - loneD).toFixed(0)} µs per pair; a trivial task's round trip through the same pool costs ${hop.toFixed(0)} µs, ` +
      `so the two pool hops of a pair (${(2 * hop).toFixed(0)} µs) account for ${Math.min(100, (200 * hop) / Math.max(1, loneM - loneD)).toFixed(0)}% of it.`,
    `${PAIRS} link+unlink pairs from 16 concurrent single-cluster callers, batched: ${times(rateRatio.median)} the rate of direct calls with 16 clusters each ` +
      `(p10 ${times(rateRatio.p10)}, p90 ${times(rateRatio.p90)}, ${ROUNDS} alternating rounds); goal ≥ 0.9×: ${rateRatio.median >= 0.9 ? 'met' : 'not met'}.`,
    `The machine is a 2-core VM shared with other test runs while this ran.`,
  ].join('\n\n');
  writeResults('links-floor', {
    json: {
      question: 'LinkManager vs direct bun:ffi on one thread: lone pair latency, batched pair rate; pool hop',
      rounds: ROUNDS,
      lonePairsPerRound: LONE,
      pairs: PAIRS,
      windowMs: WINDOW_MS,
      threads: DEFAULT_POOL_THREADS,
      lone: { directUs: lone.baseline, managerUs: lone.subject, ratios: lone.ratios, ratio: loneRatio },
      poolHopUs: hops,
      batched: { directPairsPerS: batched.baseline, managerPairsPerS: batched.subject, ratios: batched.ratios, ratio: rateRatio },
    },
    markdownTable: markdownTable(
      ['measure', 'direct bun:ffi, one thread', 'LinkManager', 'ratio / goal'],
      [
        ['lone link+unlink, µs (median)', loneD.toFixed(0), loneM.toFixed(0), `${times(loneRatio.median)} / ≤ 1.5×`],
        ['trivial task through the pool, µs', '—', hop.toFixed(0), '—'],
        [
          'pairs/s, 16 clusters (median)',
          Math.round(percentile(batched.baseline, 50)),
          Math.round(percentile(batched.subject, 50)),
          `${times(rateRatio.median)} / ≥ 0.9×`,
        ],
      ],
    ),
    summary,
  });
} finally {
  await stack.close();
  destroy(direct);
  await server.close();
}
