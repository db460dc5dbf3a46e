/**
 * Question: what does a link+unlink pair cost in the reference runtime itself, next to the floor of
 * a bare loopback TCP exchange (connect, one small request and answer, close)?
 *
 * Runs the C benchmark `native/build/link_cost` (built by `make -C native bench`), which measures in
 * one process, in alternating rounds: the bare exchange against a trivial server thread, and
 * pdrt_link + pdrt_unlink with 1 and with 16 clusters per call against 16 server contexts. Servers
 * listen on 127.0.0.2 and the client binds 127.0.0.3, as in the link benchmark of the pool. Wall and
 * CPU time (both ends: one process) and context switches per pair; the ratios are per round.
 *
 * Run: bun bench/runtime.bench.ts   → bench/results/runtime.{json,md}
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { markdownTable, percentile, spread, times, writeResults } from './lib.ts';

const ROUNDS = Number(process.env.RUNTIME_BENCH_ROUNDS ?? 8);
const PAIRS = Number(process.env.RUNTIME_BENCH_PAIRS ?? 2000);
const NATIVE = join(import.meta.dir, '..', 'native');
const KINDS = ['tcp', 'link1', 'link16'] as const;
type Kind = (typeof KINDS)[number];

interface KindSamples {
  wallUs: number[];
  cpuUs: number[];
  contextSwitches: number[];
}

interface Report {
  rounds: number;
  pairs: number;
  kinds: Record<Kind, KindSamples>;
}

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: 600_000 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

run('make', ['-s', '-C', NATIVE, 'bench']);
const report = JSON.parse(
  run(join(NATIVE, 'build', 'link_cost'), ['--rounds', String(ROUNDS), '--pairs', String(PAIRS), '--json']),
) as Report;
const { kinds } = report;

const perRound = (values: (k: KindSamples) => number[], kind: Kind) => values(kinds[kind]).map((v, i) => v / values(kinds.tcp)[i]!);
const wallRatio = { link1: spread(perRound((k) => k.wallUs, 'link1')), link16: spread(perRound((k) => k.wallUs, 'link16')) };
const cpuRatio = { link1: spread(perRound((k) => k.cpuUs, 'link1')), link16: spread(perRound((k) => k.cpuUs, 'link16')) };
const median = (kind: Kind, field: keyof KindSamples) => percentile(kinds[kind][field], 50);
for (const kind of KINDS)
  console.log(`${kind}: ${median(kind, 'wallUs').toFixed(1)} µs wall, ${median(kind, 'cpuUs').toFixed(1)} µs CPU per pair`);

const summary =
  `A pdrt link+unlink pair costs ${times(wallRatio.link1.median)} the wall time of a bare loopback TCP exchange (connect, 96 B → 40 B, close) ` +
  `with 1 cluster per call and ${times(wallRatio.link16.median)} with 16 per call (CPU: ${times(cpuRatio.link1.median)} and ${times(cpuRatio.link16.median)}); ` +
  `medians of ${report.rounds} alternating rounds of ${report.pairs} pairs per kind, client and servers in one process. ` +
  `Per pair: ${median('tcp', 'wallUs').toFixed(0)} µs bare, ${median('link1', 'wallUs').toFixed(0)} µs and ${median('link16', 'wallUs').toFixed(0)} µs pdrt.`;

const row = (kind: Kind, label: string) => [
  label,
  median(kind, 'wallUs').toFixed(1),
  median(kind, 'cpuUs').toFixed(1),
  median(kind, 'contextSwitches').toFixed(2),
  kind === 'tcp' ? '1.00×' : `${times(wallRatio[kind].median)} (p10 ${times(wallRatio[kind].p10)}, p90 ${times(wallRatio[kind].p90)})`,
  kind === 'tcp' ? '1.00×' : times(cpuRatio[kind].median),
];

writeResults('runtime', {
  json: {
    question:
      'pdrt link+unlink pair vs a bare loopback TCP exchange (connect, 96 B request, 40 B answer, close), same process, alternating rounds',
    rounds: report.rounds,
    pairsPerKind: report.pairs,
    kinds,
    ratios: { wall: wallRatio, cpu: cpuRatio },
  },
  markdownTable: markdownTable(
    ['kind', 'wall µs / pair', 'CPU µs / pair', 'context switches / pair', 'wall vs bare TCP', 'CPU vs bare TCP'],
    [row('tcp', 'bare TCP exchange'), row('link1', 'pdrt, 1 cluster per call'), row('link16', 'pdrt, 16 clusters per call')],
  ),
  summary,
});
