/**
 * The measures of bench/platforms.bench.ts and how their rounds become bench/results/platforms.{json,md}:
 * per measure each platform's median and the spread of the per-round Deno / Bun ratios.
 */
import { markdownTable, percentile, spread, times, writeResults, type Spread } from './lib.ts';

export type PlatformName = 'bun' | 'deno';

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
  rounds: Record<PlatformName, Round[]>,
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
  /** The better platform on a measure, or none when the p10–p90 spread of the ratio spans 1×. */
  const ahead = (m: Measure): PlatformName | undefined => {
    const { median, p10, p90 } = stats[m].ratio;
    if (p10 <= 1 && p90 >= 1) return undefined;
    return (LABELS[m][1] === 'higher') === median > 1 ? 'deno' : 'bun';
  };
  const verdict = (m: Measure): string => {
    const winner = ahead(m);
    return winner === undefined ? 'no clear difference' : winner === 'bun' ? 'Bun' : 'Deno';
  };
  const rows = MEASURES.map((m) => {
    const [label, better] = LABELS[m];
    const s = stats[m];
    return [
      label,
      fmt(s.bun),
      fmt(s.deno),
      `${times(s.ratio.median)} (p10 ${times(s.ratio.p10)}, p90 ${times(s.ratio.p90)})`,
      `${better} is better: ${verdict(m)}`,
    ];
  });
  const r = (m: Measure) => {
    const winner = ahead(m);
    const call = winner === undefined ? 'no clear difference' : `${winner === 'bun' ? 'Bun' : 'Deno'} ahead`;
    return `Deno ${fmt(stats[m].deno)} vs Bun ${fmt(stats[m].bun)}, ${times(stats[m].ratio.median)} (${call})`;
  };
  const within = (rt: PlatformName, a: Measure, b: Measure) =>
    times(
      percentile(
        rounds[rt].map((x) => x[a] / x[b]),
        50,
      ),
    );
  const label = (m: Measure) => LABELS[m][0].replace(/, (µs|ms|requests\/s|calls\/s).*$/, '').replace(/ \(.*\)$/, '');
  const listOf = (winner: PlatformName | undefined) => {
    const names = MEASURES.filter((m) => ahead(m) === winner && m !== 'proxyAddedP99Ms').map(label);
    return names.length === 0 ? 'none of these measures' : names.join('; ');
  };
  const summary = [
    `Bun ${bunVersion} and Deno ${denoVersion}, the same pdlink code on each, driven by one Bun client in ${ROUNDS} rounds after a warm-up round; ` +
      `in each round every measure ran on both platforms back to back, the first of the two swapped every round. The table gives each platform's ` +
      `median and the median of the per-round Deno / Bun ratios with their p10–p90 spread; a spread that spans 1× is called no clear difference.`,
    `**What each platform is better at.** Bun: ${listOf('bun')}. Deno: ${listOf('deno')}. Neither clearly: ${listOf(undefined)}.`,
    `FFI floor: direct calls per second on a context handle: ${r('ffiCallsPerS')}; on Deno the handle goes through a ` +
      `cached pointer object, on Bun it is passed as the number itself. A direct lone link+unlink pair, µs: ${r('directLoneUs')}; ` +
      `pairs per second with 16 clusters per call: ${r('directBatchedPairsPerS')}. A pair is the runtime library's socket round trips, ` +
      `the same C code under both.`,
    `Link storm through the LinkManager: a lone pair, µs: ${r('managerLoneUs')}; pairs per second from 16 concurrent callers: ` +
      `${r('managerStormPairsPerS')}. Within each platform the manager's lone pair is ${within('bun', 'managerLoneUs', 'directLoneUs')} ` +
      `the direct pair on Bun and ${within('deno', 'managerLoneUs', 'directLoneUs')} on Deno: the manager's calls go to the device runtime's ` +
      `call-queue threads and come back through each platform's thread-safe callback (Bun's JSCallback, Deno's UnsafeCallback, which holds ` +
      `the device runtime's thread until the callback has run), two hops per pair that batching spreads once 16 callers share them.`,
    `Refresh over HTTP, requests per second: 2 instances ${r('refresh2PerS')}; 4096 instances (1.5 MB bodies, every instance ` +
      `changed) ${r('refresh4096PerS')}, where reading, parsing and validating the body dominate.`,
    `Proxy against fast fake engines: added latency at c=1, ms, p50 ${r('proxyAddedP50Ms')}; p99 ${r('proxyAddedP99Ms')} ` +
      `(each over the client's own two-leg call measured right before it, so a p99 can come out below the floor's by noise). CPU per ` +
      `streamed request at c=32, µs: ${r('proxyCpuUsPerRequest')}, the steadiest gap of the table.`,
    `The machine is a 2-core VM shared with other tests and benchmarks while this ran; the client, the fake engines and the ` +
      `prefill contexts share it too, so only the ratios of one run mean anything.`,
  ].join('\n\n');
  writeResults('platforms', {
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
