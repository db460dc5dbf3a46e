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
import { FakeCluster } from '../src/ledger/fake-cluster.ts';
import { KvLedger } from '../src/ledger/ledger.ts';
import { createRegistry } from '../src/metrics.ts';

const ROUNDS = 5;
const OPS_PER_ROUND = 200_000;
const BACKGROUND = 10_000;

interface CaseResult {
  name: string;
  /** Ledger calls per iteration (a reserve+release cycle is 2). */
  callsPerIteration: number;
  iterationsPerSecond: number;
  callsPerSecond: number;
  /** Baseline iterations per second ÷ this case's: how many times slower than the Map cycle. */
  slowdownVsBaseline: number;
}

function newCluster(): FakeCluster {
  const cluster = new FakeCluster();
  cluster.refresh([
    { id: 0, role: 'prefill', availSlots: 1_000_000, availBlocks: 100_000_000 },
    { id: 1, role: 'decode', availSlots: 1_000_000, availBlocks: 100_000_000 },
  ]);
  return cluster;
}

/** Median iterations per second of `body(i)` over ROUNDS rounds, after one warm-up round. */
function measure(body: (i: number) => void): number {
  const rates: number[] = [];
  let offset = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    const start = performance.now();
    for (let i = 0; i < OPS_PER_ROUND; i++) body(offset + i);
    const seconds = (performance.now() - start) / 1000;
    offset += OPS_PER_ROUND;
    if (round > 0) rates.push(OPS_PER_ROUND / seconds);
  }
  rates.sort((a, b) => a - b);
  return rates[Math.floor(rates.length / 2)] as number;
}

// Ids are reused from a pool: every iteration ends its record, so an id is free again by the next lap.
const ids = Array.from({ length: 4096 }, (_, i) => `req-${i}`);
const id = (i: number): string => ids[i & 4095] as string;

// Baseline: the least a ledger could do — remember a small record by id, then forget it.
const map = new Map<string, { p: number; d: number; pBlocks: number; dBlocks: number }>();
const baseline = measure((i) => {
  map.set(id(i), { p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
  map.delete(id(i));
});

const results: CaseResult[] = [];
function record(name: string, callsPerIteration: number, iterationsPerSecond: number): void {
  results.push({
    name,
    callsPerIteration,
    iterationsPerSecond: Math.round(iterationsPerSecond),
    callsPerSecond: Math.round(iterationsPerSecond * callsPerIteration),
    slowdownVsBaseline: Number((baseline / iterationsPerSecond).toFixed(2)),
  });
}

{
  const ledger = new KvLedger({ cluster: newCluster() });
  record('reserve+release, idle ledger', 2, measure((i) => {
    ledger.reserve({ requestId: id(i), p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
    ledger.release(id(i), 'cancelled');
  }));
  ledger.close();
}

{
  const ledger = new KvLedger({ cluster: newCluster() });
  for (let i = 0; i < BACKGROUND; i++) ledger.reserve({ requestId: `bg-${i}`, p: 0, d: 1, pBlocks: 16, dBlocks: 16, leaseMs: 600_000 });
  record(`reserve+release, ${BACKGROUND} in flight`, 2, measure((i) => {
    ledger.reserve({ requestId: id(i), p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
    ledger.release(id(i), 'cancelled');
  }));
  ledger.close();
}

{
  const ledger = new KvLedger({ cluster: newCluster(), metrics: createRegistry() });
  record('lifecycle reserve→prefilling→transferring→done, metrics on', 4, measure((i) => {
    ledger.reserve({ requestId: id(i), p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
    ledger.begin(id(i), 'prefilling');
    ledger.begin(id(i), 'transferring');
    ledger.complete(id(i), { bytes: 16 << 16, blocks: 16 });
  }));
  ledger.close();
}

{
  const ledger = new KvLedger({ cluster: newCluster() });
  let sink = 0;
  record('instanceLoad (scheduler read)', 1, measure((i) => {
    sink += (ledger.instanceLoad(i & 1) as { availBlocks: number }).availBlocks;
  }));
  if (sink < 0) console.log(sink);
  ledger.close();
}

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
  iterationsPerRound: OPS_PER_ROUND,
  baseline: { name: 'Map set+delete cycle', iterationsPerSecond: Math.round(baseline) },
  results,
};

const dir = join(import.meta.dir, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'ledger.json'), `${JSON.stringify(output, null, 2)}\n`);
const rows = results.map(
  (r) => `| ${r.name} | ${r.iterationsPerSecond.toLocaleString('en-US')} | ${r.callsPerSecond.toLocaleString('en-US')} | ${r.slowdownVsBaseline}× |`,
);
const md = [
  '# KV ledger throughput',
  '',
  `${date} · ${machine.cpu} (${machine.cores} cores) · ${machine.os} · ${machine.runtime}`,
  '',
  `Baseline (same run): Map set+delete cycle, ${Math.round(baseline).toLocaleString('en-US')} cycles/s. Median of ${ROUNDS} rounds of ${OPS_PER_ROUND.toLocaleString('en-US')} iterations.`,
  '',
  '| case | iterations/s | ledger calls/s | time vs baseline |',
  '|---|---:|---:|---:|',
  ...rows,
  '',
].join('\n');
writeFileSync(join(dir, 'ledger.md'), md);
console.log(md);
