/**
 * Question: how close does a pull through the worker pool come to a single-thread memcpy of the
 * same bytes, by block size, over the same-host (shared memory) path and over TCP?
 *
 * Setup: P is a `pdlink instance` process (127.0.0.2) holding a cache of TOTAL bytes; two decode
 * agents live in this process, one linking with the same-host path on (127.0.0.3), one with it off
 * (127.0.0.4, TCP over loopback). Each round pulls every block of P's cache (a block list of
 * TOTAL / size entries, in one call) through the agent's transfer API, so the figure includes the
 * pool round trips, chunking and slicing (default settings: 16 MiB chunks, two slices of a transfer
 * at once on the two transfer threads; at 1 MiB blocks also one slice, for comparison); the baseline
 * copies TOTAL bytes from one ArrayBuffer into another with TypedArray.set on this thread. Baseline
 * and pull alternate (ABBA) round by round.
 * Goal: ≥ 0.7× memcpy on the same-host path for blocks ≥ 256 KiB, ≥ 0.3× over TCP.
 *
 * Run: bun bench/transfer.bench.ts   → bench/results/transfer.{json,md,svg}
 * Knobs: TRANSFER_BENCH_MIB (default 256), TRANSFER_BENCH_ROUNDS (default 8).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInstanceAgent, type InstanceAgent } from '../src/apps/agent.ts';
import { DEFAULT_CHUNK_BYTES, DEFAULT_PARALLEL_SLICES } from '../src/agent/transfers/transfers.ts';
import { DEFAULT_POOL_THREADS } from '../src/workers/pool.ts';
import { createRegistry } from '../src/core/metrics.ts';
import { cleanupConfigs, prepareCache, startAgent, type Agent } from '../test/fixtures/transfers/harness.ts';
import { alternate, markdownTable, RESULTS_DIR, spread, times, writeResults, type Spread } from './lib.ts';

const MIB = 1024 * 1024;
const TOTAL = Number(process.env['TRANSFER_BENCH_MIB'] ?? 256) * MIB;
const ROUNDS = Number(process.env['TRANSFER_BENCH_ROUNDS'] ?? 8);
const SIZES = [16 * 1024, 64 * 1024, 256 * 1024, MIB, 2 * MIB];
const GOAL = { shm: 0.7, tcp: 0.3 } as const;
const GOAL_FROM = 256 * 1024;

type Path = keyof typeof GOAL;
const PATH_NAME: Record<Path, string> = { shm: 'same-host (shared memory)', tcp: 'TCP (loopback)' };

interface Row {
  path: Path;
  /** Slices of one transfer allowed to run at once. */
  slices: number;
  blockBytes: number;
  blocks: number;
  /** GB/s per round (1 GB = 1e9 bytes). */
  pullGBps: number[];
  memcpyGBps: number[];
  ratios: number[];
  ratio: Spread;
}

const label = (bytes: number) => (bytes >= MIB ? `${bytes / MIB} MiB` : `${bytes / 1024} KiB`);
const gbps = (bytes: number, ms: number) => bytes / 1e6 / ms;

async function decodeAgent(ip: string, clusterId: bigint, sameHostFastpath: boolean, parallelSlices: number): Promise<InstanceAgent> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await createInstanceAgent({
        devices: [{ endpoint: '0', ip, port: 20000 + Math.floor(Math.random() * 30000), clusterId }],
        metrics: createRegistry(),
        transfers: { sameHostFastpath, parallelSlices },
      });
    } catch (err) {
      if (attempt > 5 || !/cannot open link endpoint/.test(String(err))) throw err;
    }
  }
}

/** One pull of every block of P's cache `cacheId` into D's cache of the same id; GB/s. */
async function pullAll(d: InstanceAgent, p: Agent, cacheId: bigint, list: Uint32Array): Promise<number> {
  const started = performance.now();
  const result = await d.transfers.pullBlocks({
    remoteClusterId: p.clusterId,
    remoteCacheId: cacheId,
    srcBlocks: list,
    dstCacheId: cacheId,
    dstBlocks: list,
    timeoutMs: 60_000,
  });
  const ms = performance.now() - started;
  if (result.ret !== 0) throw new Error(`pull failed: ${result.retName} ${result.message ?? ''}`);
  return gbps(result.bytes, ms);
}

function memcpy(src: Uint8Array, dst: Uint8Array): number {
  const started = performance.now();
  dst.set(src);
  return gbps(src.byteLength, performance.now() - started);
}

function svgChart(rows: readonly Row[]): string {
  const width = 760;
  const height = 420;
  const left = 70;
  const right = 190;
  const top = 40;
  const bottom = 60;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const maxY = Math.max(1.2, ...rows.map((r) => r.ratio.p90)) * 1.05;
  const x = (i: number) => left + (plotW * (i + 0.5)) / SIZES.length;
  const y = (v: number) => top + plotH - (plotH * v) / maxY;
  const colour: Record<Path, string> = { shm: '#2b6cb0', tcp: '#c05621' };
  const parts: string[] = [];
  for (let v = 0; v <= maxY; v += 0.2) {
    parts.push(`<line x1="${left}" x2="${left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e2e8f0"/>`);
    parts.push(`<text x="${left - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${v.toFixed(1)}×</text>`);
  }
  SIZES.forEach((s, i) => parts.push(`<text x="${x(i).toFixed(1)}" y="${top + plotH + 20}" text-anchor="middle">${label(s)}</text>`));
  for (const path of ['shm', 'tcp'] as const) {
    const goalY = y(GOAL[path]).toFixed(1);
    parts.push(
      `<line x1="${x(SIZES.indexOf(GOAL_FROM)) - 20}" x2="${left + plotW}" y1="${goalY}" y2="${goalY}" stroke="${colour[path]}" stroke-dasharray="6 4"/>`,
    );
    parts.push(
      `<text x="${left + plotW + 6}" y="${(Number(goalY) + 4).toFixed(1)}" fill="${colour[path]}">goal ${GOAL[path]}× (${path})</text>`,
    );
    const series = rows.filter((r) => r.path === path);
    const points = series.map((r) => `${x(SIZES.indexOf(r.blockBytes)).toFixed(1)},${y(r.ratio.median).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${points}" fill="none" stroke="${colour[path]}" stroke-width="2"/>`);
    for (const r of series) {
      const cx = x(SIZES.indexOf(r.blockBytes)) + (path === 'shm' ? -4 : 4);
      parts.push(
        `<line x1="${cx.toFixed(1)}" x2="${cx.toFixed(1)}" y1="${y(r.ratio.p10).toFixed(1)}" y2="${y(r.ratio.p90).toFixed(1)}" stroke="${colour[path]}"/>`,
      );
      parts.push(`<circle cx="${cx.toFixed(1)}" cy="${y(r.ratio.median).toFixed(1)}" r="4" fill="${colour[path]}"/>`);
      parts.push(
        `<text x="${(cx + 7).toFixed(1)}" y="${(y(r.ratio.median) - 6).toFixed(1)}" fill="${colour[path]}" font-size="10">${r.ratio.median.toFixed(2)}</text>`,
      );
    }
    const legendY = top + 10 + (path === 'shm' ? 0 : 18);
    parts.push(
      `<rect x="${left + plotW + 6}" y="${legendY + 40}" width="12" height="3" fill="${colour[path]}"/><text x="${left + plotW + 22}" y="${legendY + 45}">${PATH_NAME[path]}</text>`,
    );
  }
  parts.push(
    `<text x="${left + plotW / 2}" y="${height - 18}" text-anchor="middle">block size (${TOTAL / MIB} MiB pulled per round)</text>`,
  );
  parts.push(
    `<text transform="translate(18 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">pull bandwidth ÷ memcpy (median, p10–p90)</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="${width / 2}" y="22" text-anchor="middle" font-size="14">KV pull through the worker pool vs single-thread memcpy of the same bytes</text>
${parts.join('\n')}
</svg>
`;
}

const p = await startAgent('127.0.0.2', { sameHost: true });
const DEFAULT_SLICES = DEFAULT_PARALLEL_SLICES;
const SLICE_CHECK_SIZE = MIB;
// The default agents, and a second pair with one slice per transfer: at 1 MiB blocks the two are
// measured in alternating rounds, to show what the second slice brings.
const agents: { path: Path; slices: number; d: InstanceAgent }[] = [
  { path: 'shm', slices: DEFAULT_SLICES, d: await decodeAgent('127.0.0.3', 3n, true, DEFAULT_SLICES) },
  { path: 'tcp', slices: DEFAULT_SLICES, d: await decodeAgent('127.0.0.4', 4n, false, DEFAULT_SLICES) },
  { path: 'shm', slices: 1, d: await decodeAgent('127.0.0.5', 5n, true, 1) },
  { path: 'tcp', slices: 1, d: await decodeAgent('127.0.0.6', 6n, false, 1) },
];
const agentFor = (path: Path, slices: number) => agents.find((a) => a.path === path && a.slices === slices)!.d;
interface SliceCheck {
  path: Path;
  oneGBps: number[];
  twoGBps: number[];
  /** Two slices ÷ one slice, per round. */
  ratio: Spread;
}
try {
  for (const { d } of agents) {
    const linked = await d.linkManager.linkClusters([{ remoteClusterId: p.clusterId, remote: { ip: p.ip, port: p.linkPort } }]);
    if (linked.ret !== 0) throw new Error(`link failed: ${linked.rets}`);
  }
  const src = new Uint8Array(TOTAL).fill(7);
  const dst = new Uint8Array(TOTAL);
  memcpy(src, dst); // both buffers touched before the first measured copy

  const rows: Row[] = [];
  const sliceChecks: SliceCheck[] = [];
  for (const [i, blockBytes] of SIZES.entries()) {
    const cacheId = BigInt(100 + i);
    const blocks = TOTAL / blockBytes;
    const list = Uint32Array.from({ length: blocks }, (_, b) => b);
    await prepareCache(p, Number(cacheId), blocks, blockBytes);
    const used = agents.filter((a) => a.slices === DEFAULT_SLICES || blockBytes === SLICE_CHECK_SIZE);
    for (const { d } of used) {
      if ((await d.transfers.registerCache('0', { cacheId, numBlocks: blocks, blockBytes })).ret !== 0) throw new Error('register failed');
      await pullAll(d, p, cacheId, list); // warm-up: peer mapping or data connection, page tables
    }
    for (const path of ['shm', 'tcp'] as const) {
      const d = agentFor(path, DEFAULT_SLICES);
      const run = await alternate(
        ROUNDS,
        () => memcpy(src, dst),
        () => pullAll(d, p, cacheId, list),
      );
      const row: Row = {
        path,
        slices: DEFAULT_SLICES,
        blockBytes,
        blocks,
        pullGBps: run.subject,
        memcpyGBps: run.baseline,
        ratios: run.ratios,
        ratio: spread(run.ratios),
      };
      rows.push(row);
      console.log(
        `${PATH_NAME[path]} ${label(blockBytes)}: pull ${spread(run.subject).median.toFixed(2)} GB/s, memcpy ${spread(run.baseline).median.toFixed(2)} GB/s, ratio ${times(row.ratio.median)}`,
      );
      if (blockBytes === SLICE_CHECK_SIZE) {
        const one = agentFor(path, 1);
        const vs = await alternate(
          ROUNDS,
          () => pullAll(one, p, cacheId, list),
          () => pullAll(d, p, cacheId, list),
        );
        sliceChecks.push({ path, oneGBps: vs.baseline, twoGBps: vs.subject, ratio: spread(vs.ratios) });
        console.log(`${PATH_NAME[path]} ${label(blockBytes)}: two slices ÷ one slice ${times(spread(vs.ratios).median)}`);
      }
    }
    for (const { d } of used) await d.transfers.unregisterCache('0', cacheId);
    await fetch(`${p.url}/v1/kv/caches/${cacheId}`, { method: 'DELETE' });
  }

  const met = (path: Path) => rows.filter((r) => r.path === path && r.blockBytes >= GOAL_FROM).every((r) => r.ratio.median >= GOAL[path]);
  const range = (path: Path) => {
    const rs = rows.filter((r) => r.path === path && r.blockBytes >= GOAL_FROM).map((r) => r.ratio.median);
    return `${times(Math.min(...rs))}–${times(Math.max(...rs))}`;
  };
  const sliceNote = sliceChecks
    .map(
      (c) =>
        `${c.path} ${spread(c.oneGBps).median.toFixed(2)} → ${spread(c.twoGBps).median.toFixed(2)} GB/s (${times(c.ratio.median)} per round, p10–p90 ${times(c.ratio.p10)}–${times(c.ratio.p90)})`,
    )
    .join('; ');
  const summary =
    `Pull of ${TOTAL / MIB} MiB through the pool vs single-thread memcpy of the same bytes, ${ROUNDS} ABBA rounds per row. ` +
    `Same-host path, blocks ≥ 256 KiB: ${range('shm')} memcpy (goal ≥ 0.7×: ${met('shm') ? 'met' : 'not met'}). ` +
    `TCP, blocks ≥ 256 KiB: ${range('tcp')} memcpy (goal ≥ 0.3×: ${met('tcp') ? 'met' : 'not met'}). ` +
    `A second slice per transfer (default 2), 1 MiB blocks, ABBA against one slice: ${sliceNote}.\n\n![pull bandwidth vs memcpy](transfer.svg)`;
  const table = markdownTable(
    ['path', 'block', 'blocks per pull', 'pull GB/s (median)', 'memcpy GB/s (median)', 'pull ÷ memcpy (median)', 'p10–p90'],
    rows.map((r) => [
      PATH_NAME[r.path],
      label(r.blockBytes),
      r.blocks,
      spread(r.pullGBps).median.toFixed(2),
      spread(r.memcpyGBps).median.toFixed(2),
      times(r.ratio.median),
      `${times(r.ratio.p10)}–${times(r.ratio.p90)}`,
    ]),
  );
  const sliceTable = markdownTable(
    ['path (1 MiB blocks)', 'one slice GB/s (median)', 'two slices GB/s (median)', 'two ÷ one (median)', 'p10–p90'],
    sliceChecks.map((c) => [
      PATH_NAME[c.path],
      spread(c.oneGBps).median.toFixed(2),
      spread(c.twoGBps).median.toFixed(2),
      times(c.ratio.median),
      `${times(c.ratio.p10)}–${times(c.ratio.p90)}`,
    ]),
  );
  writeResults('transfer', {
    json: {
      question: 'pull bandwidth through the worker pool vs single-thread memcpy of the same bytes, by block size and path',
      totalBytes: TOTAL,
      rounds: ROUNDS,
      goal: GOAL,
      settings: { chunkBytes: DEFAULT_CHUNK_BYTES, slices: DEFAULT_SLICES, transferThreads: DEFAULT_POOL_THREADS },
      rows,
      sliceChecks,
    },
    markdownTable: `${table}\n\n${sliceTable}`,
    summary,
  });
  writeFileSync(join(RESULTS_DIR, 'transfer.svg'), svgChart(rows));
  console.log(summary);
} finally {
  await Promise.all(agents.map((a) => a.d.close()));
  await p.child.kill('SIGTERM');
  cleanupConfigs();
}
