/**
 * Question: which worker-pool settings (threads, clusters per runtime call, batch encoding,
 * piscina atomics mode) move link+unlink cycles over loopback fastest, relative to the
 * one-cluster-per-call configuration measured in the same run?
 *
 * Workload: 16 concurrent callers, each linking one cluster (16 prefill devices of one `pdlink
 * instance` child on 127.0.0.2) and then unlinking it, repeated; the link manager coalesces the
 * callers into runtime calls of at most `batch` clusters. Threads 1/2/4 × batch 1/4/16 ×
 * encodings clone/msgpack/shared; then, at the best of those, the atomics modes, and the batch
 * window (0, 1, 2 ms) with callers arriving over successive turns of the event loop, as HTTP
 * requests do, instead of all in one turn.
 *
 * Run: bun bench/pool.bench.ts   → bench/results/pool.{json,md,svg}
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LLM_STATUS } from '../src/core/llm-status.ts';
import type { PoolAtomics } from '../src/workers/pool.ts';
import { ENCODINGS, type Encoding } from '../src/workers/protocol.ts';
import { startClientStack, startServerSide, type ServerSide } from '../test/fixtures/links/stack.ts';
import { markdownTable, percentile, RESULTS_DIR, times, writeResults } from './lib.ts';

const CYCLES = Number(process.env.POOL_BENCH_CYCLES ?? 30);
const PASSES = 2;
const THREADS = [1, 2, 4];
const BATCHES = [1, 4, 16];
const ATOMICS: PoolAtomics[] = ['sync', 'async', 'disabled'];

interface Setting {
  threads: number;
  batch: number;
  encoding: Encoding;
  atomics: PoolAtomics;
  /** Batch window in ms; with a window set, callers arrive one per event-loop turn. */
  windowMs?: number;
}

const WINDOWS = [0, 1, 2];
const label = (s: Setting) =>
  `t${s.threads} b${s.batch} ${s.encoding} ${s.atomics}${s.windowMs === undefined ? '' : ` window ${s.windowMs} ms, staggered`}`;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Link+unlink pairs per second for one setting. */
async function measure(server: ServerSide, s: Setting): Promise<number> {
  const stack = await startClientStack({
    threads: s.threads,
    maxBatch: s.batch,
    encoding: s.encoding,
    atomics: s.atomics,
    batchWindowMs: s.windowMs ?? 0,
  });
  const staggered = s.windowMs !== undefined;
  const spread = async <T>(make: (i: number) => Promise<T>): Promise<T[]> => {
    const calls: Promise<T>[] = [];
    for (let i = 0; i < server.targets.length; i++) {
      if (staggered && i > 0) await nextTurn();
      calls.push(make(i));
    }
    return Promise.all(calls);
  };
  try {
    const cycle = async () => {
      const linked = await spread((i) => stack.manager.linkClusters([server.targets[i]!], { timeoutMs: 3000 }));
      const unlinked = await spread((i) => stack.manager.unlinkClusters([server.targets[i]!], { timeoutMs: 3000 }));
      for (const r of [...linked, ...unlinked])
        if (r.ret !== LLM_STATUS.LLM_SUCCESS) throw new Error(`${label(s)}: call failed with ${r.rets}`);
    };
    await cycle(); // warm-up: threads started, code paths compiled
    const start = performance.now();
    for (let i = 0; i < CYCLES; i++) await cycle();
    return (CYCLES * server.targets.length) / ((performance.now() - start) / 1000);
  } finally {
    await stack.close();
  }
}

function svgChart(rows: { name: string; value: number }[], title: string): string {
  const width = 980;
  const barH = 16;
  const left = 300;
  const max = Math.max(...rows.map((r) => r.value));
  const height = 40 + rows.length * (barH + 4);
  const bars = rows
    .map((r, i) => {
      const y = 30 + i * (barH + 4);
      const w = ((width - left - 80) * r.value) / max;
      return `<text x="${left - 6}" y="${y + 12}" text-anchor="end">${r.name}</text><rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="#4a7bd0"/><text x="${(left + w + 4).toFixed(1)}" y="${y + 12}">${Math.round(r.value)}</text>`;
    })
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="${width / 2}" y="18" text-anchor="middle" font-size="13">${title}</text>
${bars}
</svg>
`;
}

const server = await startServerSide('127.0.0.2', 16, '127.0.0.3');
try {
  const settings: Setting[] = THREADS.flatMap((threads) =>
    BATCHES.flatMap((batch) => ENCODINGS.map((encoding) => ({ threads, batch, encoding, atomics: 'sync' as PoolAtomics }))),
  );
  const samples = new Map<string, number[]>();
  for (let pass = 0; pass < PASSES; pass++) {
    // Alternate the order between passes so drift in the machine's load hits every setting alike.
    const order = pass % 2 === 0 ? settings : [...settings].reverse();
    for (const s of order) {
      const rate = await measure(server, s);
      samples.set(label(s), [...(samples.get(label(s)) ?? []), rate]);
      console.log(`${label(s)}: ${rate.toFixed(0)} pairs/s`);
    }
  }
  const median = (s: Setting) => percentile(samples.get(label(s)) ?? [], 50);
  const baseline = (threads: number) => median({ threads, batch: 1, encoding: 'clone', atomics: 'sync' });
  const best = settings.reduce((a, b) => (median(b) > median(a) ? b : a));

  // Tuning passes at the best setting, kept under labels of their own (the sweep's samples stay as measured).
  const base = { threads: best.threads, batch: best.batch, encoding: best.encoding };
  const tuning: Setting[] = [
    ...ATOMICS.map((atomics): Setting => ({ ...base, atomics })),
    ...WINDOWS.map((windowMs): Setting => ({ ...base, atomics: best.atomics, windowMs })),
  ];
  const tuneLabel = (t: Setting) => `${label(t)} (tuning pass)`;
  for (let pass = 0; pass < PASSES; pass++) {
    for (const t of pass % 2 === 0 ? tuning : [...tuning].reverse()) {
      const rate = await measure(server, t);
      samples.set(tuneLabel(t), [...(samples.get(tuneLabel(t)) ?? []), rate]);
      console.log(`${tuneLabel(t)}: ${rate.toFixed(0)} pairs/s`);
    }
  }
  const tuned = (t: Setting) => percentile(samples.get(tuneLabel(t)) ?? [], 50);
  const rows = [
    ...settings.map((s) => [
      s.threads,
      s.batch,
      s.encoding,
      s.atomics,
      '0, same turn',
      Math.round(median(s)),
      times(median(s) / baseline(s.threads)),
    ]),
    ...tuning.map((t) => [
      t.threads,
      t.batch,
      t.encoding,
      t.atomics,
      t.windowMs === undefined ? '0, same turn' : `${t.windowMs}, staggered`,
      Math.round(tuned(t)),
      times(tuned(t) / baseline(t.threads)),
    ]),
  ];
  const summary =
    `Sweep best: ${label(best)} at ${Math.round(median(best))} link+unlink pairs/s, ` +
    `${times(median(best) / baseline(best.threads))} the one-cluster-per-call setting with as many threads. ` +
    `Atomics at that setting (tuning pass): ${ATOMICS.map((a) => `${a} ${Math.round(tuned({ ...base, atomics: a }))}`).join(', ')} pairs/s. ` +
    `Batch window with callers arriving one per event-loop turn: ${WINDOWS.map((w) => `${w} ms ${Math.round(tuned({ ...base, atomics: best.atomics, windowMs: w }))}`).join(', ')} pairs/s. ` +
    `Median of ${PASSES} passes of ${CYCLES} cycles × 16 callers; the last ${tuning.length} rows are the tuning passes.`;
  writeResults('pool', {
    json: {
      question: 'link+unlink pairs per second over loopback by pool setting, vs one cluster per runtime call with the same threads',
      cycles: CYCLES,
      passes: PASSES,
      samples: Object.fromEntries(samples),
      best,
    },
    markdownTable: markdownTable(
      ['threads', 'batch', 'encoding', 'atomics', 'window ms, callers', 'pairs/s (median)', 'vs batch 1, same threads'],
      rows,
    ),
    summary: `${summary}\n\n![pairs per second by setting](pool.svg)`,
  });
  writeFileSync(
    join(RESULTS_DIR, 'pool.svg'),
    svgChart(
      [...settings.map((s) => ({ name: label(s), value: median(s) })), ...tuning.map((t) => ({ name: `${label(t)} *`, value: tuned(t) }))],
      'link+unlink pairs per second over loopback (median)',
    ),
  );
  console.log(summary);
} finally {
  await server.close();
}
