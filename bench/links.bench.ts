/**
 * Questions: (1) how much faster do 10,000 link+unlink pairs over loopback go through the batched
 * pool (≤ 16 clusters per runtime call) than with one task per link, same threads, same run —
 * goal ≥ 10×; (2) how late does the main thread's event loop run (p99) while 1,000 links to
 * peers that never answer wait out 3,000 ms timeouts — goal ≤ 10 ms, against the same loop idle.
 *
 * Run: bun bench/links.bench.ts   → bench/results/links.{json,md}
 */
import { LLM_STATUS } from '../src/core/llm-status.ts';
import type { EndpointTarget } from '../src/links/types.ts';
import { DEFAULT_POOL_THREADS } from '../src/workers/pool.ts';
import { startClientStack, startServerSide, type ServerSide } from '../test/fixtures/links/stack.ts';
import { alternate, markdownTable, percentile, spread, times, writeResults } from './lib.ts';

const PAIRS = Number(process.env.LINKS_BENCH_PAIRS ?? 10_000);
const ROUNDS = 4;
const DEAD_LINKS = 1000;
const DEAD_TIMEOUT_MS = 3000;

/** Link+unlink pairs per second of `pairs` pairs, 16 concurrent single-cluster callers at a time. */
async function pairsPerSecond(server: ServerSide, maxBatch: number, pairs: number): Promise<number> {
  const stack = await startClientStack({ threads: DEFAULT_POOL_THREADS, maxBatch, parallelCalls: DEFAULT_POOL_THREADS });
  try {
    const cycle = async () => {
      const linked = await Promise.all(server.targets.map((t) => stack.manager.linkClusters([t])));
      const unlinked = await Promise.all(server.targets.map((t) => stack.manager.unlinkClusters([t])));
      for (const r of [...linked, ...unlinked]) if (r.ret !== LLM_STATUS.LLM_SUCCESS) throw new Error(`call failed: ${r.rets}`);
    };
    await cycle();
    const cycles = Math.ceil(pairs / server.targets.length);
    const start = performance.now();
    for (let i = 0; i < cycles; i++) await cycle();
    return (cycles * server.targets.length) / ((performance.now() - start) / 1000);
  } finally {
    await stack.close();
  }
}

/** Lateness of a 1 ms interval timer while `work` runs: each gap between ticks minus the period, in ms. */
async function loopLag(work: () => Promise<unknown>): Promise<number[]> {
  const lags: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    lags.push(Math.max(0, now - last - 1));
    last = now;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return lags;
}

/** A child process with a listener that accepts connections and never answers. */
async function startBlackhole(ip: string) {
  const child = Bun.spawn(
    [
      process.execPath,
      '-e',
      `require('node:net').createServer(() => {}).listen({ port: 0, host: '${ip}', backlog: 4096 }, function () { console.log(this.address().port); });`,
    ],
    { stdout: 'pipe', stderr: 'inherit' },
  );
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  const port = Number(new TextDecoder().decode(value).trim());
  return {
    port,
    close: async () => {
      child.kill();
      await child.exited;
    },
  };
}

const server = await startServerSide('127.0.0.2', 16, '127.0.0.3');
try {
  // (1) Throughput: alternating rounds, each round PAIRS / ROUNDS pairs per side.
  const perRound = Math.ceil(PAIRS / ROUNDS);
  const throughput = await alternate(
    ROUNDS,
    () => pairsPerSecond(server, 1, perRound),
    () => pairsPerSecond(server, 16, perRound),
  );
  const ratio = spread(throughput.ratios);
  console.log(`batched vs one task per link: ${times(ratio.median)} (rounds ${throughput.ratios.map(times).join(', ')})`);

  // (2) Event-loop lag while 1,000 links to a peer that never answers wait on their timeouts.
  const hole = await startBlackhole('127.0.0.4');
  const stack = await startClientStack({ threads: DEFAULT_POOL_THREADS, maxBatch: 16, parallelCalls: DEFAULT_POOL_THREADS });
  let codes: number[] = [];
  let waitMs = 0;
  let idleLags: number[] = [];
  let busyLags: number[] = [];
  try {
    idleLags = await loopLag(() => new Promise((r) => setTimeout(r, DEAD_TIMEOUT_MS)));
    const dead: EndpointTarget[] = Array.from({ length: DEAD_LINKS }, (_, i) => ({
      remoteClusterId: BigInt(900_000 + i),
      remote: { ip: '127.0.0.4', port: hole.port },
    }));
    const started = performance.now();
    busyLags = await loopLag(async () => {
      const calls = [];
      for (let i = 0; i < dead.length; i += 16)
        calls.push(stack.manager.linkClusters(dead.slice(i, i + 16), { timeoutMs: DEAD_TIMEOUT_MS }));
      codes = (await Promise.all(calls)).flatMap((r) => [...r.rets]);
    });
    waitMs = performance.now() - started;
  } finally {
    await stack.close();
    await hole.close();
  }
  const timeouts = codes.filter((c) => c === LLM_STATUS.LLM_TIMEOUT).length;
  const lagP99 = percentile(busyLags, 99);
  const idleP99 = percentile(idleLags, 99);
  console.log(
    `event-loop lag p99: ${lagP99.toFixed(2)} ms busy, ${idleP99.toFixed(2)} ms idle; ${timeouts}/${codes.length} TIMEOUT in ${waitMs.toFixed(0)} ms`,
  );

  const summary = [
    `Batched pool (≤ 16 clusters per runtime call) vs one task per link, ${DEFAULT_POOL_THREADS} threads, ${PAIRS} link+unlink pairs per side: ` +
      `${times(ratio.median)} (median of ${ROUNDS} alternating rounds; p10 ${times(ratio.p10)}, p90 ${times(ratio.p90)}); goal ≥ 10×: ${ratio.median >= 10 ? 'met' : 'not met'}.`,
    `Event-loop lag p99 while ${DEAD_LINKS} links to a never-answering peer waited on ${DEAD_TIMEOUT_MS} ms timeouts: ${lagP99.toFixed(2)} ms ` +
      `(idle loop, same run: ${idleP99.toFixed(2)} ms); goal ≤ 10 ms: ${lagP99 <= 10 ? 'met' : 'not met'}. ` +
      `${timeouts} of ${codes.length} links answered TIMEOUT; all answered after ${(waitMs / 1000).toFixed(1)} s (queued batches time out at their deadline without a runtime call).`,
  ].join('\n\n');
  writeResults('links', {
    json: {
      question:
        'batched pool vs one task per link (link+unlink pairs/s, same run); event-loop lag p99 under 1,000 links waiting on timeouts',
      pairsPerSide: PAIRS,
      rounds: ROUNDS,
      threads: DEFAULT_POOL_THREADS,
      throughput: { onePerLink: throughput.baseline, batched: throughput.subject, ratios: throughput.ratios, ratio },
      lag: {
        deadLinks: DEAD_LINKS,
        timeoutMs: DEAD_TIMEOUT_MS,
        p50: percentile(busyLags, 50),
        p99: lagP99,
        max: Math.max(...busyLags),
        idleP99,
        timeouts,
        answered: codes.length,
        waitMs,
      },
    },
    markdownTable: markdownTable(
      ['measure', 'baseline', 'pdlink', 'ratio / goal'],
      [
        [
          'link+unlink pairs/s (median)',
          `${Math.round(percentile(throughput.baseline, 50))} (one task per link)`,
          `${Math.round(percentile(throughput.subject, 50))} (batched)`,
          `${times(ratio.median)} / ≥ 10×`,
        ],
        ['event-loop lag p99, ms', `${idleP99.toFixed(2)} (idle)`, `${lagP99.toFixed(2)} (1,000 links waiting)`, '≤ 10 ms'],
      ],
    ),
    summary,
  });
} finally {
  await server.close();
}
