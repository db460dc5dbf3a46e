/**
 * Shared helpers of the benchmarks. The machine is shared and noisy, so a benchmark never reports
 * an absolute figure alone: it measures a baseline and its subject in alternating rounds of one run
 * and reports their ratio, round by round.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Resolved from this module's URL, so a benchmark's Deno side can load these helpers too. */
export const RESULTS_DIR = fileURLToPath(new URL('results', import.meta.url));

export interface Spread {
  median: number;
  p10: number;
  p90: number;
  min: number;
  max: number;
}

/**
 * The p-th percentile (0–100) of a list, interpolating between neighbours.
 * @example percentile([1, 2, 3, 4], 50) // 2.5
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}

/**
 * Median, p10, p90, min and max of a list.
 * @example spread(ratios).median
 */
export function spread(values: readonly number[]): Spread {
  return {
    median: percentile(values, 50),
    p10: percentile(values, 10),
    p90: percentile(values, 90),
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

export interface Alternated {
  /** One measurement per round, in round order. */
  baseline: number[];
  subject: number[];
  /** subject / baseline, per round. */
  ratios: number[];
}

/**
 * Runs `rounds` rounds of baseline and subject, swapping which goes first every round (ABBA), so
 * drift in the machine's load hits both alike. Each function returns one measurement.
 * @example const r = await alternate(10, () => opsPerSecond(raw), () => opsPerSecond(pdlink)); spread(r.ratios)
 */
export async function alternate(
  rounds: number,
  baseline: () => number | Promise<number>,
  subject: () => number | Promise<number>,
): Promise<Alternated> {
  const out: Alternated = { baseline: [], subject: [], ratios: [] };
  for (let round = 0; round < rounds; round++) {
    let b: number;
    let s: number;
    if (round % 2 === 0) {
      b = await baseline();
      s = await subject();
    } else {
      s = await subject();
      b = await baseline();
    }
    out.baseline.push(b);
    out.subject.push(s);
    out.ratios.push(s / b);
  }
  return out;
}

/**
 * Milliseconds per call of `fn`, calling it in batches until `minMs` have passed.
 * @example const ms = msPerCall(() => JSON.parse(text), 200);
 */
export function msPerCall(fn: () => unknown, minMs = 200): number {
  let calls = 0;
  let batch = 1;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minMs) {
    for (let i = 0; i < batch; i++) fn();
    calls += batch;
    elapsed = performance.now() - start;
    if (elapsed < minMs / 10) batch *= 2;
  }
  return elapsed / calls;
}

export interface Machine {
  cores: number;
  cpu: string;
  memoryGiB: number;
  bun: string;
  platform: string;
}

/** What the results were measured on. */
export function machine(): Machine {
  const list = cpus();
  return {
    cores: list.length,
    cpu: list[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    bun: Bun.version,
    platform: `${process.platform}-${process.arch}`,
  };
}

/**
 * Renders rows as a Markdown table.
 * @example markdownTable(['size', 'ratio'], [[16, '1.2×']])
 */
export function markdownTable(headers: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

/**
 * Writes `bench/results/<name>.json` and `<name>.md`, both stamped with the date and the machine.
 * @example writeResults('refresh', { json: { ratios }, markdownTable: table, summary: 'apply ≤ 2× JSON.parse: yes' });
 */
export function writeResults(name: string, results: { json: Record<string, unknown>; markdownTable: string; summary: string }): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const date = new Date().toISOString();
  const host = machine();
  const json = { name, date, machine: host, summary: results.summary, ...results.json };
  writeFileSync(join(RESULTS_DIR, `${name}.json`), `${JSON.stringify(json, null, 2)}\n`);
  const md = [
    `# ${name}`,
    '',
    `${date} · ${host.cores} cores (${host.cpu}) · ${host.memoryGiB} GiB · Bun ${host.bun} · ${host.platform}`,
    '',
    results.summary,
    '',
    results.markdownTable,
    '',
  ].join('\n');
  writeFileSync(join(RESULTS_DIR, `${name}.md`), md);
}

/** Formats a ratio as `1.23×`. */
export const times = (ratio: number): string => `${ratio.toFixed(2)}×`;

/** A seeded xorshift32 (never seeded with 0), so a policy that draws at random draws the same sequence in every run. */
export function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

/**
 * `count` prompts of token ids that share a system prompt of 4 blocks, then 4 blocks of their own:
 * the scheduler benches' workload for cache_affinity.
 */
export function sharedPrefixPrompts(count: number, block: number): number[][] {
  const system = Array.from({ length: 4 * block }, (_, i) => 1000 + i);
  return Array.from({ length: count }, (_, k) => [...system, ...Array.from({ length: 4 * block }, (_, i) => 50_000 + k * 4 * block + i)]);
}
