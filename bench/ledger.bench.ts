/**
 * Question: how many KV-ledger operations per second does one core sustain, relative to the
 * cheapest bookkeeping imaginable (a Map set + delete of a small record) measured in the same run?
 *
 * Cases: a reserve+release cycle on an idle ledger; the same with 10 000 other records in flight
 * (lease heap and per-instance sets at depth); a full request lifecycle (reserve, begin prefilling,
 * begin transferring, complete) with metrics on; and the scheduler's instanceLoad read.
 *
 * Run: bun bench/ledger.bench.ts   → bench/results/ledger.json and bench/results/ledger.md
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, platform, release } from 'node:os';
import { join } from 'node:path';
import { TestCluster } from '../test/doubles/cluster.ts';
import { KvLedger } from '../src/ledger/ledger.ts';
import { createRegistry } from '../src/core/metrics.ts';

const ROUNDS = 7;
const ITERATIONS = 100_000;
const BACKGROUND = 10_000;

interface CaseResult {
  name: string;
  /** Ledger calls per iteration (a reserve+release cycle is 2). */
  callsPerIteration: number;
  /** Median over rounds. */
  iterationsPerSecond: number;
  callsPerSecond: number;
  /** Per round, baseline rate ÷ this case's rate (how many times slower than the Map cycle): median, p10, p90. */
  slowdown: { median: number; p10: number; p90: number };
}

function newCluster(): TestCluster {
  const cluster = new TestCluster();
  cluster.refresh([
    { id: 0, role: 'prefill', availSlots: 1_000_000, availBlocks: 100_000_000 },
    { id: 1, role: 'decode', availSlots: 1_000_000, availBlocks: 100_000_000 },
  ]);
  return cluster;
}

/** Iterations per second of one round of `body(i)`. */
function rate(body: (i: number) => void): number {
  const start = performance.now();
  for (let i = 0; i < ITERATIONS; i++) body(i);
  return ITERATIONS / ((performance.now() - start) / 1000);
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.round(q * (sorted.length - 1))] as number;
}

// Ids are reused from a pool: every iteration ends its record, so an id is free again by the next lap.
const ids = Array.from({ length: 4096 }, (_, i) => `req-${i}`);
const id = (i: number): string => ids[i & 4095] as string;

// Baseline: the least a ledger could do — remember a small record by id, then forget it.
const map = new Map<string, { p: number; d: number; pBlocks: number; dBlocks: number }>();
const baselineBody = (i: number): void => {
  map.set(id(i), { p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
  map.delete(id(i));
};
const baselineRates: number[] = [];

/**
 * Measures a case against the baseline in alternating rounds (ABBA order, after one warm-up of
 * each), so load from other processes on the shared machine hits both alike.
 */
function compare(name: string, callsPerIteration: number, body: (i: number) => void): CaseResult {
  rate(baselineBody);
  rate(body);
  const ratios: number[] = [];
  const rates: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let base: number;
    let subject: number;
    if (round % 2 === 0) {
      base = rate(baselineBody);
      subject = rate(body);
    } else {
      subject = rate(body);
      base = rate(baselineBody);
    }
    baselineRates.push(base);
    rates.push(subject);
    ratios.push(base / subject);
  }
  const median = quantile(rates, 0.5);
  const round2 = (x: number): number => Number(x.toFixed(2));
  return {
    name,
    callsPerIteration,
    iterationsPerSecond: Math.round(median),
    callsPerSecond: Math.round(median * callsPerIteration),
    slowdown: { median: round2(quantile(ratios, 0.5)), p10: round2(quantile(ratios, 0.1)), p90: round2(quantile(ratios, 0.9)) },
  };
}

const results: CaseResult[] = [];

{
  const ledger = new KvLedger({ cluster: newCluster() });
  results.push(
    compare('reserve+release, idle ledger', 2, (i) => {
      ledger.reserve({ requestId: id(i), p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
      ledger.release(id(i), 'cancelled');
    }),
  );
  ledger.close();
}

{
  const ledger = new KvLedger({ cluster: newCluster() });
  for (let i = 0; i < BACKGROUND; i++) ledger.reserve({ requestId: `bg-${i}`, p: 0, d: 1, pBlocks: 16, dBlocks: 16, leaseMs: 600_000 });
  results.push(
    compare(`reserve+release, ${BACKGROUND} in flight`, 2, (i) => {
      ledger.reserve({ requestId: id(i), p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
      ledger.release(id(i), 'cancelled');
    }),
  );
  ledger.close();
}

{
  const ledger = new KvLedger({ cluster: newCluster(), metrics: createRegistry() });
  results.push(
    compare('lifecycle reserve→prefilling→transferring→done, metrics on', 4, (i) => {
      ledger.reserve({ requestId: id(i), p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
      ledger.begin(id(i), 'prefilling');
      ledger.begin(id(i), 'transferring');
      ledger.complete(id(i), { bytes: 16 << 16, blocks: 16 });
    }),
  );
  ledger.close();
}

{
  const ledger = new KvLedger({ cluster: newCluster() });
  let sink = 0;
  results.push(
    compare('instanceLoad (scheduler read)', 1, (i) => {
      sink += (ledger.instanceLoad(i & 1) as { availBlocks: number }).availBlocks;
    }),
  );
  if (sink < 0) console.log(sink);
  ledger.close();
}
const baseline = quantile(baselineRates, 0.5);

const machine = {
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  os: `${platform()} ${release()}`,
  runtime: `bun ${Bun.version}`,
};
const date = new Date().toISOString();
const output = {
  question: 'KV-ledger operations per second vs a Map set+delete cycle, same run',
  date,
  machine,
  rounds: ROUNDS,
  iterationsPerRound: ITERATIONS,
  baseline: { name: 'Map set+delete cycle', iterationsPerSecond: Math.round(baseline) },
  results,
};

const dir = join(import.meta.dir, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'ledger.json'), `${JSON.stringify(output, null, 2)}\n`);
const rows = results.map(
  (r) =>
    `| ${r.name} | ${r.iterationsPerSecond.toLocaleString('en-US')} | ${r.callsPerSecond.toLocaleString('en-US')} | ${r.slowdown.median}× (${r.slowdown.p10}–${r.slowdown.p90}) |`,
);
const md = [
  '# KV ledger throughput',
  '',
  `${date} · ${machine.cpu} (${machine.cores} cores) · ${machine.os} · ${machine.runtime}`,
  '',
  `Baseline (same run, alternating rounds): Map set+delete cycle, median ${Math.round(baseline).toLocaleString('en-US')} cycles/s.`,
  `Each case: ${ROUNDS} rounds of ${ITERATIONS.toLocaleString('en-US')} iterations, ABBA-alternated with the baseline; rates are medians, the ratio is per round (median, p10–p90).`,
  '',
  '| case | iterations/s | ledger calls/s | time per iteration vs baseline |',
  '|---|---:|---:|---:|',
  ...rows,
  '',
].join('\n');
writeFileSync(join(dir, 'ledger.md'), md);
console.log(md);
