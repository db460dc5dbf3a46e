/**
 * The measures of bench/runtimes.bench.ts and how their rounds become bench/results/runtimes.{json,md}:
 * per measure each runtime's median and the spread of the per-round Deno / Bun ratios.
 */
import { markdownTable, percentile, spread, times, writeResults, type Spread } from './lib.ts';

export type RuntimeName = 'bun' | 'deno';

export const MEASURES = [
  'ffiCallsPerS',
  'directLoneUs',
  'directBatchedPairsPerS',
  'managerLoneUs',
  'managerStormPairsPerS',
  'refresh2PerS',
  'refresh4096PerS',
  'proxyAddedP50Ms',
  'proxyAddedP99Ms',
  'proxyCpuUsPerRequest',
] as const;
export type Measure = (typeof MEASURES)[number];
export type Round = Record<Measure, number>;

const LABELS: Record<Measure, [string, 'higher' | 'lower']> = {
  ffiCallsPerS: ['direct FFI calls/s (pdrt_listen_port, main thread)', 'higher'],
  directLoneUs: ['direct link+unlink pair, µs (median, main thread)', 'lower'],
  directBatchedPairsPerS: ['direct pairs/s, 16 clusters per call', 'higher'],
  managerLoneUs: ['LinkManager lone link+unlink pair, µs (median)', 'lower'],
  managerStormPairsPerS: ['LinkManager pairs/s, 16 concurrent callers', 'higher'],
  refresh2PerS: ['refresh over HTTP, 2 instances, requests/s', 'higher'],
  refresh4096PerS: ['refresh over HTTP, 4096 instances, requests/s', 'higher'],
  proxyAddedP50Ms: ['proxy added latency p50 at c=1, ms', 'lower'],
  proxyAddedP99Ms: ['proxy added latency p99 at c=1, ms', 'lower'],
  proxyCpuUsPerRequest: ['proxy CPU per request at c=32, µs', 'lower'],
};

/**
 * Writes the results of a run's rounds, with the settings it ran with.
 * @example report(rounds, '1.4.5', '2.9.6', { rounds: 12 })
 */
export function report(
  rounds: Record<RuntimeName, Round[]>,
  bunVersion: string,
  denoVersion: string,
  settings: Record<string, number>,
): void {
  const ROUNDS = rounds.bun.length;
  const stats = {} as Record<Measure, { bun: number; deno: number; ratio: Spread; ratios: number[] }>;
  for (const m of MEASURES) {
    const bun = rounds.bun.map((r) => r[m]);
    const deno = rounds.deno.map((r) => r[m]);
    const ratios = deno.map((x, i) => x / bun[i]!);
    stats[m] = { bun: percentile(bun, 50), deno: percentile(deno, 50), ratio: spread(ratios), ratios };
  }
  const fmt = (x: number) => (Math.abs(x) >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(2));
  const rows = MEASURES.map((m) => {
    const [label, better] = LABELS[m];
    const s = stats[m];
    const winner = (better === 'higher') === s.ratio.median > 1 ? 'Deno' : 'Bun';
    return [
      label,
      fmt(s.bun),
      fmt(s.deno),
      `${times(s.ratio.median)} (p10 ${times(s.ratio.p10)}, p90 ${times(s.ratio.p90)})`,
      `${better} is better: ${winner}`,
    ];
  });
  const r = (m: Measure) => times(stats[m].ratio.median);
  const within = (rt: RuntimeName, a: Measure, b: Measure) =>
    times(
      percentile(
        rounds[rt].map((x) => x[a] / x[b]),
        50,
      ),
    );
  const summary = [
    `Bun ${bunVersion} and Deno ${denoVersion}, the same pdlink code on each, driven by one Bun client in ${ROUNDS} rounds after a warm-up round; ` +
      `in each round every measure ran on both runtimes back to back, the first of the two swapped every round; the table gives each runtime's median and the ` +
      `median of the per-round Deno / Bun ratios with their p10–p90 spread.`,
    `FFI: Deno's \`Deno.dlopen\` call on a context handle runs at ${r('ffiCallsPerS')} Bun's \`bun:ffi\` rate (the handle becomes a pointer ` +
      `object on Deno, a plain number on Bun). A direct lone link+unlink pair takes ${r('directLoneUs')} Bun's time and the 16-per-call ` +
      `direct rate is ${r('directBatchedPairsPerS')} Bun's: the pair is dominated by the runtime library's socket round trips, the same on both.`,
    `Link storm through the LinkManager: a lone pair takes ${r('managerLoneUs')} Bun's time; 16 concurrent callers get ${r('managerStormPairsPerS')} ` +
      `Bun's pair rate. Within each runtime the manager's lone pair is ${within('bun', 'managerLoneUs', 'directLoneUs')} (Bun) and ` +
      `${within('deno', 'managerLoneUs', 'directLoneUs')} (Deno) the direct pair: the worker-pool hops cost each runtime differently.`,
    `Refresh over HTTP: ${r('refresh2PerS')} Bun's request rate with 2 instances (the serving path dominates) and ${r('refresh4096PerS')} with ` +
      `4096 (JSON parsing and validation dominate).`,
    `Proxy: added latency at c=1 is ${r('proxyAddedP50Ms')} Bun's at p50 and ${r('proxyAddedP99Ms')} at p99 (each over the client's own ` +
      `two-leg call measured right before it); CPU per streamed request at c=32 is ${r('proxyCpuUsPerRequest')} Bun's.`,
    `The machine is a 2-core VM shared with other engineers' tests and benchmarks while this ran; the client, the fake engines and the ` +
      `prefill contexts share it too, so only the ratios of one run mean anything.`,
  ].join('\n\n');
  writeResults('runtimes', {
    json: {
      question: 'Bun vs Deno for pdlink: link storm (and FFI floor), refresh over HTTP, proxy added latency and CPU per request',
      rounds: ROUNDS,
      versions: { bun: bunVersion, deno: denoVersion },
      settings,
      measures: stats,
      rawRounds: rounds,
    },
    markdownTable: markdownTable(['measure', `Bun ${bunVersion}`, `Deno ${denoVersion}`, 'Deno / Bun', 'verdict'], rows),
    summary,
  });
  console.log(summary);
}
