/**
 * Question: how close do links through the LinkManager (the runtime's call-queue threads, batcher,
 * production 1 ms window) come to calling the runtime directly over bun:ffi on one thread, in the
 * same run? (1) a lone link+unlink pair, one after the other — goal ≤ 1.5× direct — and the same
 * pair sent through the runtime's threads without the manager, the floor of a lone call that leaves
 * the main thread; the manager and the bare hop again on worker threads (the pool's other path, and
 * the only one for a runtime without a call queue); (2) 10,000 pairs from 16 concurrent
 * single-cluster callers, batched — goal ≥ 0.9× the direct 16-clusters-per-call rate — on both paths.
 * Also, to say where the rest goes: the hop alone (an unlink of a cluster the context never linked,
 * which the runtime answers NOT_YET_LINK without touching the network) on the main thread, through
 * the runtime's threads, through worker threads, and through the pool's piscina threads;
 * and the manager's own work per pair, with an executor that answers at once (no thread, no runtime);
 * and lone pairs run back to back on a worker thread of their own (links-floor-thread.ts), which
 * tells a runtime call slower off the main thread apart from the wake-ups of threads that sleep
 * between the hops of a call.
 *
 * Pinning: not by default. LINKS_FLOOR_PIN=1 re-runs the bench under `taskset -c 0` and moves the
 * server process to core 1; on this 2-core machine that starved the client runtime's own threads
 * during a direct call (16-per-call direct rate 2,494 pairs/s pinned against 6,907 unpinned in one
 * run), so pinning distorts the floor rather than steadying it. Rounds alternate which side
 * goes first; many rounds and their p10–p90 spread stand in for a quiet machine.
 *
 * Run: bun bench/links-floor.bench.ts   → bench/results/links-floor.{json,md}
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import { LLM_STATUS } from '../src/core/llm-status.ts';
import { create, destroy, link, unlink } from '../src/ffi/runtime.ts';
import { LinkManager } from '../src/links/manager.ts';
import type { LinkExecutor } from '../src/links/types.ts';
import type { ClusterSpec } from '../src/ffi/layout.ts';
import { encodeClusters } from '../src/workers/encoding.ts';
import { DEFAULT_POOL_THREADS } from '../src/workers/pool.ts';
import { startClientStack, startServerSide, type ClientStack, type ServerSide } from '../test/fixtures/links/stack.ts';
import { alternate, markdownTable, percentile, spread, times, writeResults, type Spread } from './lib.ts';
import type { ThreadRequest } from './links-floor-thread.ts';

const PAIRS = Number(process.env['LINKS_FLOOR_PAIRS'] ?? 10_000);
const LONE = Number(process.env['LINKS_FLOOR_LONE'] ?? 400);
const ROUNDS = Number(process.env['LINKS_FLOOR_ROUNDS'] ?? 12);
const BATCHED_ROUNDS = Number(process.env['LINKS_FLOOR_BATCHED_ROUNDS'] ?? 6);
const WINDOW_MS = 1; // the production default (docs/agent.md: pool.batch_window_ms)
const PIN_ENV = 'LINKS_FLOOR_PINNED';

// Re-run pinned to core 0 when asked, taskset is there and this run is not pinned yet.
if (process.env['LINKS_FLOOR_PIN'] === '1' && process.env[PIN_ENV] === undefined && Bun.which('taskset') !== null) {
  const run = spawnSync('taskset', ['-c', '0', process.execPath, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, [PIN_ENV]: '1' },
  });
  process.exit(run.status ?? 1);
}
const pinned = process.env[PIN_ENV] === '1';
/** 1-minute load average when the run began and ended: how much else the 2 cores were running. */
const load = { start: loadavg()[0]!, end: 0 };

const server: ServerSide = await startServerSide('127.0.0.2', 16, '127.0.0.3');
if (pinned) {
  // Every thread of the server process (its runtime's I/O and serve threads included) to core 1.
  spawnSync('taskset', ['-a', '-p', '-c', '1', String(server.child.process.pid)], { stdio: 'ignore' });
}
const specs: ClusterSpec[] = server.targets.map((t) => ({
  remoteClusterId: t.remoteClusterId,
  remoteIp: t.remote.ip,
  remotePort: t.remote.port,
  localIp: '127.0.0.3',
}));
const direct = create({ clusterId: BigInt(Date.now()) * 1000n + 7n, role: 'decoder' });
/** As an instance agent builds it: batches may be split over the pool's threads. */
const stack: ClientStack = await startClientStack({
  threads: DEFAULT_POOL_THREADS,
  maxBatch: 16,
  batchWindowMs: WINDOW_MS,
  parallelCalls: DEFAULT_POOL_THREADS,
});
/** The same stack linking on worker threads. */
const workers: ClientStack = await startClientStack({
  threads: DEFAULT_POOL_THREADS,
  maxBatch: 16,
  batchWindowMs: WINDOW_MS,
  parallelCalls: DEFAULT_POOL_THREADS,
  linkThreads: 'workers',
});

const pairThread = new Worker(new URL('./links-floor-thread.ts', import.meta.url));
await new Promise((resolve) => pairThread.once('message', resolve));

/** Median µs of a lone pair run back to back on a worker thread of its own. */
function loneInThread(): Promise<number> {
  const request: ThreadRequest = { specs, pairs: LONE };
  return new Promise((resolve, reject) => {
    pairThread.once('error', reject);
    pairThread.once('message', (median: number) => {
      pairThread.off('error', reject);
      resolve(median);
    });
    pairThread.postMessage(request);
  });
}

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

/** Median µs of a lone pair through the manager of `on` (the runtime's threads by default). */
async function loneManager(on: ClientStack = stack): Promise<number> {
  const us: number[] = [];
  for (let i = 0; i < LONE; i++) {
    const t = server.targets[i % server.targets.length]!;
    const start = performance.now();
    ok((await on.manager.linkClusters([t])).rets);
    ok((await on.manager.unlinkClusters([t])).rets);
    us.push((performance.now() - start) * 1000);
  }
  return percentile(us, 50);
}

/** A cluster the contexts never link: unlinking it is a runtime call that stays in the process. */
const NOBODY: ClusterSpec = { remoteClusterId: 1n, remoteIp: '127.0.0.2', remotePort: 1, localIp: '' };
const nobodyBatch = () =>
  encodeClusters('clone', [{ id: NOBODY.remoteClusterId, ip: NOBODY.remoteIp, port: NOBODY.remotePort, localIp: '', localPort: 0 }]).batch;

/** Median µs of the no-op unlink: `where` = this thread, the runtime's threads, worker threads, or a trivial task on the piscina threads. */
async function hop(where: 'main' | 'runtime threads' | 'worker threads' | 'piscina'): Promise<number> {
  const us: number[] = [];
  for (let i = 0; i < LONE; i++) {
    const start = performance.now();
    if (where === 'main') {
      if (unlink(direct, [NOBODY], 3000).rets[0] !== LLM_STATUS.LLM_NOT_YET_LINK)
        throw new Error('no-op unlink did not answer NOT_YET_LINK');
    } else if (where !== 'piscina') {
      const on = where === 'runtime threads' ? stack : workers;
      const reply = await on.pool.run<{ rets: number[] }>({
        op: 'unlink',
        handle: on.handle,
        timeoutMs: 3000,
        deadline: Date.now() + 3000,
        force: false,
        batch: nobodyBatch(),
      });
      if (!reply.ok || reply.value.rets[0] !== LLM_STATUS.LLM_NOT_YET_LINK)
        throw new Error(`no-op unlink failed: ${JSON.stringify(reply)}`);
    } else {
      const reply = await stack.pool.run({ op: 'list', handle: stack.handle });
      if (!reply.ok) throw new Error(`list failed: ${reply.message}`);
    }
    us.push((performance.now() - start) * 1000);
  }
  return percentile(us, 50);
}

/** An executor that answers at once: what is left of a call is the manager's own work. */
const INSTANT: LinkExecutor = {
  link: (_endpoint, clusters) => Promise.resolve({ rets: clusters.map(() => LLM_STATUS.LLM_SUCCESS) }),
  unlink: (_endpoint, clusters) => Promise.resolve({ rets: clusters.map(() => LLM_STATUS.LLM_SUCCESS) }),
};

/** Median µs of the manager's own work per pair, lone or in 16-caller batches, with the instant executor. */
async function bookkeeping(batched: boolean): Promise<number> {
  const manager = new LinkManager({ executor: INSTANT, endpoints: ['0'], maxBatch: 16, batchWindowMs: WINDOW_MS });
  const targets = server.targets;
  const us: number[] = [];
  for (let i = 0; i < LONE; i++) {
    const start = performance.now();
    if (batched) {
      for (const r of await Promise.all(targets.map((t) => manager.linkClusters([t])))) ok(r.rets);
      for (const r of await Promise.all(targets.map((t) => manager.unlinkClusters([t])))) ok(r.rets);
    } else {
      ok((await manager.linkClusters([targets[i % targets.length]!])).rets);
      ok((await manager.unlinkClusters([targets[i % targets.length]!])).rets);
    }
    us.push(((performance.now() - start) * 1000) / (batched ? targets.length : 1));
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

/** The direct floor's 16 clusters as the link threads take a batch. */
const threadBatches = (() => {
  const all = server.targets.map((t) => ({
    id: t.remoteClusterId,
    ip: t.remote.ip,
    port: t.remote.port,
    localIp: '127.0.0.3',
    localPort: 0,
  }));
  return { whole: all, halves: [all.slice(0, all.length / 2), all.slice(all.length / 2)] };
})();

/** One link or unlink task of `clusters` through the link threads of `on`, without the manager. */
async function threadCall(op: 'link' | 'unlink', clusters: typeof threadBatches.whole, on: ClientStack = stack): Promise<void> {
  const reply = await on.pool.run<{ rets: number[] }>({
    op,
    handle: on.handle,
    timeoutMs: 3000,
    deadline: Date.now() + 3000,
    force: false,
    batch: encodeClusters('clone', clusters).batch,
  });
  if (!reply.ok) throw new Error(`${op} through the link threads failed: ${reply.message}`);
  ok(reply.value.rets);
}

/**
 * Median µs of a lone pair through the link threads without the manager: one link task and one
 * unlink task of one cluster each, awaited one after the other. The floor of any lone call that
 * crosses a thread hop with these threads; the manager's lone pair is measured against it too.
 */
async function loneThreads(on: ClientStack = stack): Promise<number> {
  const us: number[] = [];
  for (let i = 0; i < LONE; i++) {
    const one = [threadBatches.whole[i % threadBatches.whole.length]!];
    const start = performance.now();
    await threadCall('link', one, on);
    await threadCall('unlink', one, on);
    us.push((performance.now() - start) * 1000);
  }
  return percentile(us, 50);
}

/**
 * Pairs/s through the link threads without the manager: 16 clusters per call (`split` false), or
 * the same 16 as two calls of 8 on both link threads at once. The first is the floor of any design
 * that sends a batch across one thread hop; the second asks whether spreading a batch over the idle
 * link threads would beat it.
 */
async function batchedThreads(pairs: number, split: boolean): Promise<number> {
  const calls = Math.ceil(pairs / specs.length);
  const start = performance.now();
  for (let i = 0; i < calls; i++) {
    for (const op of ['link', 'unlink'] as const) {
      if (split) await Promise.all(threadBatches.halves.map((half) => threadCall(op, half)));
      else await threadCall(op, threadBatches.whole);
    }
  }
  return (calls * specs.length) / ((performance.now() - start) / 1000);
}

/** Pairs/s through the manager of `on`, 16 concurrent single-cluster callers. */
async function batchedManager(pairs: number, on: ClientStack = stack): Promise<number> {
  const cycles = Math.ceil(pairs / server.targets.length);
  const start = performance.now();
  for (let i = 0; i < cycles; i++) {
    for (const r of await Promise.all(server.targets.map((t) => on.manager.linkClusters([t])))) ok(r.rets);
    for (const r of await Promise.all(server.targets.map((t) => on.manager.unlinkClusters([t])))) ok(r.rets);
  }
  return (cycles * server.targets.length) / ((performance.now() - start) / 1000);
}

const us = (n: number) => n.toFixed(0);
const range = (s: Spread) => `p10 ${times(s.p10)}, p90 ${times(s.p90)}`;

try {
  // Warm every path.
  loneDirect();
  await loneManager();
  await loneManager(workers);
  for (const where of ['main', 'runtime threads', 'worker threads', 'piscina'] as const) await hop(where);
  await batchedManager(16 * 20);
  await batchedManager(16 * 20, workers);
  await batchedThreads(16 * 20, false);
  await batchedThreads(16 * 20, true);
  await loneThreads();
  await loneThreads(workers);
  const lone = await alternate(ROUNDS, loneDirect, () => loneManager());
  const loneOnWorkers = await alternate(ROUNDS, loneDirect, () => loneManager(workers));
  const loneHop = await alternate(ROUNDS, loneDirect, () => loneThreads());
  const loneWorkerHop = await alternate(ROUNDS, loneDirect, () => loneThreads(workers));
  const loneOverHop = await alternate(
    ROUNDS,
    () => loneThreads(),
    () => loneManager(),
  );
  const hops = { main: [] as number[], runtimeThreads: [] as number[], workerThreads: [] as number[], piscina: [] as number[] };
  const own = { lone: [] as number[], batched: [] as number[] };
  const inThread = await alternate(ROUNDS, loneDirect, loneInThread);
  for (let r = 0; r < ROUNDS; r++) {
    hops.main.push(await hop('main'));
    hops.runtimeThreads.push(await hop('runtime threads'));
    hops.workerThreads.push(await hop('worker threads'));
    hops.piscina.push(await hop('piscina'));
    own.lone.push(await bookkeeping(false));
    own.batched.push(await bookkeeping(true));
  }
  const batched = await alternate(
    BATCHED_ROUNDS,
    () => batchedDirect(PAIRS),
    () => batchedManager(PAIRS),
  );
  const batchedOnWorkers = await alternate(
    BATCHED_ROUNDS,
    () => batchedDirect(PAIRS),
    () => batchedManager(PAIRS, workers),
  );
  const threadsWhole = await alternate(
    BATCHED_ROUNDS,
    () => batchedDirect(PAIRS),
    () => batchedThreads(PAIRS, false),
  );
  const threadsSplit = await alternate(
    BATCHED_ROUNDS,
    () => batchedDirect(PAIRS),
    () => batchedThreads(PAIRS, true),
  );
  const loneRatio = spread(lone.ratios);
  const loneWorkersRatio = spread(loneOnWorkers.ratios);
  const loneHopRatio = spread(loneHop.ratios);
  const loneWorkerHopRatio = spread(loneWorkerHop.ratios);
  const loneOverHopRatio = spread(loneOverHop.ratios);
  // Rate ratio: manager / direct (higher is better).
  const rateRatio = spread(batched.ratios);
  const rateWorkersRatio = spread(batchedOnWorkers.ratios);
  const wholeRatio = spread(threadsWhole.ratios);
  const splitRatio = spread(threadsSplit.ratios);
  const loneD = percentile(lone.baseline, 50);
  const loneM = percentile(lone.subject, 50);
  const hopMain = percentile(hops.main, 50);
  const hopRuntime = percentile(hops.runtimeThreads, 50);
  const hopWorkers = percentile(hops.workerThreads, 50);
  const hopPiscina = percentile(hops.piscina, 50);
  /** Each round's median round trip, in round order. */
  const hopRounds = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
  // What a round trip adds over the same call on this thread; a pair makes two.
  const perHop = hopRuntime - hopMain;
  const ownLone = percentile(own.lone, 50);
  const ownBatched = percentile(own.batched, 50);
  // Differences taken within each round (both sides ran back to back) and then their median: on a
  // shared machine the medians of each side alone can come from rounds of different load.
  const pairedDiff = (a: { baseline: number[]; subject: number[] }) =>
    percentile(
      a.subject.map((s, i) => s - a.baseline[i]!),
      50,
    );
  const added = pairedDiff(lone);
  const threadRatio = spread(inThread.ratios);
  // What a call costs more off the main thread, with nobody waking its thread, per pair.
  const offMain = pairedDiff(inThread);
  // The rest of what the manager adds: the waits for a sleeping thread to run again (the runtime's
  // thread on a call, the main thread on its answer), twice per call beyond what a hot hop costs.
  const wakeUps = added - 2 * perHop - ownLone - offMain;
  const row = (r: Spread) => `${times(r.median)} (${times(r.p10)}–${times(r.p90)})`;
  console.log(
    `lone pair: manager ${us(loneM)} µs vs direct ${us(loneD)} µs → ${times(loneRatio.median)} (${range(loneRatio)}; rounds ${lone.ratios.map(times).join(', ')})`,
  );
  console.log(
    `lone pair through the runtime's threads without the manager: ${us(percentile(loneHop.subject, 50))} µs, ${times(loneHopRatio.median)} direct (${range(loneHopRatio)}); ` +
      `the manager's lone pair ${times(loneOverHopRatio.median)} of it (${range(loneOverHopRatio)})`,
  );
  console.log(
    `on worker threads: manager ${us(percentile(loneOnWorkers.subject, 50))} µs, ${times(loneWorkersRatio.median)} direct (${range(loneWorkersRatio)}); ` +
      `without the manager ${us(percentile(loneWorkerHop.subject, 50))} µs, ${times(loneWorkerHopRatio.median)} (${range(loneWorkerHopRatio)})`,
  );
  console.log(
    `no-op call: main ${hopMain.toFixed(1)} µs, runtime threads ${hopRuntime.toFixed(1)} µs (rounds ${hopRounds(hops.runtimeThreads)}), ` +
      `worker threads ${hopWorkers.toFixed(1)} µs (rounds ${hopRounds(hops.workerThreads)}), piscina (trivial task) ${hopPiscina.toFixed(1)} µs`,
  );
  console.log(`manager's own work per pair: lone ${ownLone.toFixed(1)} µs, batched ${ownBatched.toFixed(1)} µs`);
  console.log(
    `lone pair back to back on a thread of its own: ${us(percentile(inThread.subject, 50))} µs, ${times(threadRatio.median)} direct (${range(threadRatio)})`,
  );
  console.log(
    `batched: ${times(rateRatio.median)} of the direct 16-per-call rate (${range(rateRatio)}; rounds ${batched.ratios.map(times).join(', ')}); ` +
      `on worker threads ${times(rateWorkersRatio.median)} (${range(rateWorkersRatio)})`,
  );
  console.log(
    `batched through the runtime's threads without the manager: 16 per call ${times(wholeRatio.median)} (${range(wholeRatio)}), ` +
      `two calls of 8 on both threads at once ${times(splitRatio.median)} (${range(splitRatio)}) of the direct rate`,
  );
  load.end = loadavg()[0]!;
  const summary = [
    `Lone link+unlink pair through the LinkManager (${DEFAULT_POOL_THREADS} of the runtime's call-queue threads, ${WINDOW_MS} ms batch window): ${us(loneM)} µs median, ` +
      `${times(loneRatio.median)} a direct bun:ffi pair on the main thread (${us(loneD)} µs); ${range(loneRatio)} over ${ROUNDS} alternating rounds of ${LONE} pairs; ` +
      `goal ≤ 1.5×: ${loneRatio.median <= 1.5 ? 'met' : 'not met'}. ` +
      `The same pair sent to the runtime's threads without the manager (one link task, one unlink task) takes ${us(percentile(loneHop.subject, 50))} µs, ` +
      `${times(loneHopRatio.median)} direct (${range(loneHopRatio)}): the floor of a lone call made off the main thread this way, ` +
      `and the manager's lone pair takes ${times(loneOverHopRatio.median)} of it (${range(loneOverHopRatio)}). ` +
      `On worker threads (the pool's path for a runtime without a call queue) the manager's pair is ${times(loneWorkersRatio.median)} direct (${range(loneWorkersRatio)}) ` +
      `and the bare hop ${times(loneWorkerHopRatio.median)} (${range(loneWorkerHopRatio)}). Every figure here: ${ROUNDS} alternating rounds against direct calls. ` +
      `A round trip with a runtime call that stays in the process took ${hopRuntime.toFixed(1)} µs through the runtime's threads (round medians ${hopRounds(hops.runtimeThreads)} µs) ` +
      `and ${hopWorkers.toFixed(1)} µs through worker threads (${hopRounds(hops.workerThreads)} µs).`,
    `Where the ${us(added)} µs the manager adds per pair go (median of the differences within a round): that call (unlinking a cluster never linked) takes ${hopMain.toFixed(1)} µs on the main thread ` +
      `and ${hopRuntime.toFixed(1)} µs through the runtime's threads, so one round trip costs ${perHop.toFixed(1)} µs and the pair's two ${(2 * perHop).toFixed(0)} µs ` +
      `(${Math.min(100, (200 * perHop) / Math.max(1, added)).toFixed(0)}% of what the manager adds); the manager's own work, measured apart with an executor that answers at once, is ${ownLone.toFixed(1)} µs per lone pair (${ownBatched.toFixed(1)} µs per pair in 16-caller batches); ` +
      `the same pairs run back to back on a worker thread of their own take ${us(percentile(inThread.subject, 50))} µs, ${times(threadRatio.median)} direct (${range(threadRatio)}, ${ROUNDS} alternating rounds), ` +
      `so off the main thread a runtime call itself costs ${Math.abs(offMain) < 1 ? 'the same to within 1 µs per pair' : `${Math.abs(offMain).toFixed(0)} µs per pair ${offMain >= 0 ? 'more' : 'less'} (within the spread)`}; ` +
      `the remaining ${wakeUps.toFixed(0)} µs${wakeUps < 0 ? ' (below zero: the split is lost in the spread of this run)' : ''} are the waits for a sleeping thread to run again (the runtime's thread when a call arrives, the main thread when the answer does), which a hop between two busy threads does not pay. ` +
      `A trivial task through the pool's piscina threads costs ${hopPiscina.toFixed(1)} µs.`,
    `${PAIRS.toLocaleString('en')} link+unlink pairs per round from 16 concurrent single-cluster callers, batched: ${times(rateRatio.median)} the rate of direct calls with 16 clusters each ` +
      `(${range(rateRatio)}, ${BATCHED_ROUNDS} alternating rounds); goal ≥ 0.9×: ${rateRatio.median >= 0.9 ? 'met' : 'not met'}; on worker threads ${times(rateWorkersRatio.median)} (${range(rateWorkersRatio)}). ` +
      `The manager splits what leaves together over the idle threads (parallelCalls = the pool's threads, as the instance agent sets it), so 16 callers make two calls of 8 at once. ` +
      `Sent to the runtime's threads without the manager, two calls of 8 at once reach ${times(splitRatio.median)} the direct rate (${range(splitRatio)}), and the manager keeps ${times(rateRatio.median / splitRatio.median)} of that; ` +
      `one call of 16 reaches ${times(wholeRatio.median)} (${range(wholeRatio)}): ` +
      (splitRatio.p10 > wholeRatio.p90
        ? 'in this run the split beat one call of 16 beyond both spreads.'
        : splitRatio.p90 < wholeRatio.p10
          ? 'in this run the split did worse than one call of 16 beyond both spreads.'
          : `the split's median is ${splitRatio.median >= wholeRatio.median ? 'above' : 'below'} it, within both spreads in this run.`),
    `${pinned ? 'Client pinned to core 0 and the server process to core 1 (taskset)' : 'Not pinned (pinning the client to one core starved its runtime threads and slowed the direct floor 2.8×; see the bench header)'}; the machine is a 2-core VM shared with other test runs while this ran (1-minute load average ${load.start.toFixed(1)} at the start, ${load.end.toFixed(1)} at the end).`,
  ].join('\n\n');
  const pairOf = (a: { baseline: number[]; subject: number[]; ratios: number[] }, r: Spread) => ({
    directUs: a.baseline,
    subjectUs: a.subject,
    ratios: a.ratios,
    ratio: r,
  });
  const rateOf = (a: { baseline: number[]; subject: number[]; ratios: number[] }, r: Spread) => ({
    directPairsPerS: a.baseline,
    subjectPairsPerS: a.subject,
    ratios: a.ratios,
    ratio: r,
  });
  writeResults('links-floor', {
    json: {
      question:
        'LinkManager vs direct bun:ffi on one thread: lone pair latency, batched pair rate; on the runtime threads and on worker threads; what one round trip costs',
      rounds: ROUNDS,
      lonePairsPerRound: LONE,
      batchedRounds: BATCHED_ROUNDS,
      pairsPerBatchedRound: PAIRS,
      windowMs: WINDOW_MS,
      threads: DEFAULT_POOL_THREADS,
      pinned,
      loadAverage: load,
      lone: pairOf(lone, loneRatio),
      loneOnWorkerThreads: pairOf(loneOnWorkers, loneWorkersRatio),
      loneRuntimeThreadsNoManager: pairOf(loneHop, loneHopRatio),
      loneWorkerThreadsNoManager: pairOf(loneWorkerHop, loneWorkerHopRatio),
      managerOverRuntimeThreads: {
        threadsUs: loneOverHop.baseline,
        managerUs: loneOverHop.subject,
        ratios: loneOverHop.ratios,
        ratio: loneOverHopRatio,
      },
      noOpCallUs: hops,
      managerOwnUsPerPair: own,
      loneInThread: pairOf(inThread, threadRatio),
      wakeUpsUsPerPair: wakeUps,
      batched: rateOf(batched, rateRatio),
      batchedOnWorkerThreads: rateOf(batchedOnWorkers, rateWorkersRatio),
      batchedRuntimeThreadsNoManager: { whole: rateOf(threadsWhole, wholeRatio), split: rateOf(threadsSplit, splitRatio) },
    },
    markdownTable: markdownTable(
      ['measure', 'direct bun:ffi, one thread', 'subject', 'ratio (p10–p90) / goal'],
      [
        ['lone link+unlink through the LinkManager, µs (median)', us(loneD), us(loneM), `${row(loneRatio)} / ≤ 1.5×`],
        [
          "lone link+unlink through the runtime's threads without the manager, µs (median); the manager over it",
          us(percentile(loneHop.baseline, 50)),
          us(percentile(loneHop.subject, 50)),
          `${row(loneHopRatio)}; manager ${row(loneOverHopRatio)}`,
        ],
        [
          'lone link+unlink through the LinkManager on worker threads, µs (median)',
          us(percentile(loneOnWorkers.baseline, 50)),
          us(percentile(loneOnWorkers.subject, 50)),
          row(loneWorkersRatio),
        ],
        [
          'lone link+unlink through worker threads without the manager, µs (median)',
          us(percentile(loneWorkerHop.baseline, 50)),
          us(percentile(loneWorkerHop.subject, 50)),
          row(loneWorkerHopRatio),
        ],
        ["no-op runtime call, µs (main thread / runtime's threads)", hopMain.toFixed(1), hopRuntime.toFixed(1), '—'],
        ['no-op runtime call through worker threads, µs', '—', hopWorkers.toFixed(1), '—'],
        ['trivial task through the piscina threads, µs', '—', hopPiscina.toFixed(1), '—'],
        [
          'lone pair back to back on a worker thread of its own, µs (median)',
          us(percentile(inThread.baseline, 50)),
          us(percentile(inThread.subject, 50)),
          row(threadRatio),
        ],
        ['waits for sleeping threads per lone pair (the rest of what the manager adds), µs', '—', wakeUps.toFixed(0), '—'],
        [
          "manager's own work per pair, instant executor, µs (lone / batched)",
          '—',
          `${ownLone.toFixed(1)} / ${ownBatched.toFixed(1)}`,
          '—',
        ],
        [
          `pairs/s through the LinkManager, 16 callers, ${PAIRS.toLocaleString('en')} pairs (median)`,
          Math.round(percentile(batched.baseline, 50)),
          Math.round(percentile(batched.subject, 50)),
          `${row(rateRatio)} / ≥ 0.9×`,
        ],
        [
          'pairs/s through the LinkManager on worker threads (median)',
          Math.round(percentile(batchedOnWorkers.baseline, 50)),
          Math.round(percentile(batchedOnWorkers.subject, 50)),
          row(rateWorkersRatio),
        ],
        [
          "pairs/s, 16 clusters per call through the runtime's threads, no manager (median)",
          Math.round(percentile(threadsWhole.baseline, 50)),
          Math.round(percentile(threadsWhole.subject, 50)),
          row(wholeRatio),
        ],
        [
          "pairs/s, the same as two calls of 8 on both threads at once, no manager (the manager's split) (median)",
          Math.round(percentile(threadsSplit.baseline, 50)),
          Math.round(percentile(threadsSplit.subject, 50)),
          row(splitRatio),
        ],
      ],
    ),
    summary,
  });
} finally {
  const end: ThreadRequest = null;
  pairThread.postMessage(end);
  await new Promise((resolve) => pairThread.once('exit', resolve));
  await stack.close();
  await workers.close();
  destroy(direct);
  await server.close();
}
