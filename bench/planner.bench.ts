/**
 * Question: when the workload shifts halfway from prefill-heavy (long prompts, short answers) to
 * decode-heavy (short prompts, long answers), how much goodput does the controller's P:D planner keep
 * on 4 simulated instances, against the best static split a user would have picked for the first
 * half? Goal: planner ≥ 1.3× that split's goodput over the whole run.
 *
 * Set-up: for every run a fresh simulated cluster (src/sim/cluster/cluster.ts) of 4 `pdlink
 * sim-engine` processes (prefill ms per token, a decode batch that slows each token as it grows, a 1 s
 * role switch that drops the KV cache), a Coordinator and `pdlink controller` whose topology file
 * leaves the roles open (the P:D rates give the first split) and whose planner is off or on; `pdlink
 * bench` as a child process replays the workload open loop with `--controller-url`, so its report
 * carries the roles over the run. First the three static splits run the first half alone (the split a
 * user would pick from it); then the whole workload runs with that split, planner off and planner on
 * (load mode; SLA mode too with PLANNER_BENCH_SLA=1, from a profile `pdlink bench --profile` measures
 * on one P and one D first), in alternating rounds, and 2P2D static for reference. Ratios are against
 * the static split of the same round. The machine's load average is recorded with each run.
 *
 * Run: `bun bench/planner.bench.ts` (or `npm run bench -- planner`); results in
 * bench/results/planner.{json,md}, the last round's report pages (charts; their JSON, which holds every request, is not kept) in
 * bench/results/planner-{off,load,sla,2p2d}.html and planner-first-half-{1p3d,2p2d,3p1d}.html.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { spawnListening, until, type ManagedProcess } from '../src/sim/cluster/process.ts';
import { markdownTable, times, writeResults } from './lib.ts';

const REPO = join(import.meta.dir, '..');
const RESULTS = join(REPO, 'bench', 'results');
const WORK = mkdtempSync(join(tmpdir(), 'pdlink-planner-bench-'));
const ROUNDS = Number(process.env['PLANNER_BENCH_ROUNDS'] ?? '2');
const SLA = process.env['PLANNER_BENCH_SLA'] === '1';
const SCALE = Number(process.env['PLANNER_BENCH_SCALE'] ?? '1');

/** The engines: prefill 0.1 ms a prompt token; decode 8 ms a token, 10 % slower per other generating leg. */
const ENGINE = {
  numBlocks: 4096,
  blockTokens: 16,
  prefillMsPerToken: 0.1,
  decodeMsPerToken: 8,
  decodeBatchSlowdown: 0.1,
  maxModelLen: 4096,
  roleSwitchMs: 1000,
};
/** First half: 1600-token prompts, 8-token answers; second half: 64-token prompts, 80-token answers. */
const PHASE1 = { rate: 15, input: 1600, output: 8, requests: Math.round(900 * SCALE) };
const PHASE2 = { rate: 16, input: 64, output: 80, requests: Math.round(960 * SCALE) };
const SLO = { ttftMs: 2000, tpotMs: 30 };
const PLANNER_TIMING = { interval_seconds: 1, window_seconds: 5, cooldown_seconds: 5, margin: 0.2 };
/** Load mode: a P saturated at 4 prefills in flight, a D at 20 decodes (its TPOT is 23 ms at 20). */
const LOAD = { prefill_in_flight: 4, decode_in_flight: 20 };

type Mode = 'off' | 'load' | 'sla';
interface Config {
  readonly name: string;
  readonly p: number;
  readonly d: number;
  readonly mode: Mode;
}

interface Summary {
  requests: number;
  completed: number;
  failed: number;
  ttftMs: { p50: number | null; p99: number | null };
  tpotMs: { p50: number | null; p99: number | null };
  goodput: { requests: number; requestsPerS: number; share: number };
}

interface Row {
  readonly phase: 'first-half' | 'whole';
  readonly config: string;
  readonly round: number;
  readonly summary: Summary;
  readonly durationS: number;
  readonly moves: number;
  readonly load: readonly number[];
}

function log(line: string): void {
  console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
}

/** A topology file for the cluster's engines: roles open, the split as P:D rates, the planner's section. */
function writeTopology(cluster: SimCluster, config: Config, profile: string | undefined): string {
  const path = join(cluster.dir, 'planner-topology.json');
  const planner =
    config.mode === 'off'
      ? undefined
      : {
          mode: config.mode,
          ...PLANNER_TIMING,
          ...(config.mode === 'load' ? { load: LOAD } : { sla: { ttft_ms: SLO.ttftMs, tpot_ms: SLO.tpotMs, profile } }),
        };
  const body = {
    coordinators: [cluster.coordinatorUrl],
    default_p_rate: config.p,
    default_d_rate: config.d,
    timing: { drain_timeout_seconds: 10 },
    ...(planner === undefined ? {} : { planner }),
    instances: cluster.engines.map((e) => ({ ...cluster.topologyEntry(e), role: null })),
  };
  writeFileSync(path, JSON.stringify(body, null, 2));
  return path;
}

async function serving(controller: string, config: Config): Promise<void> {
  let last = '';
  await until(
    async () => {
      const view = (await (await fetch(`${controller}/v1/cluster`)).json()) as { instances: { role: string; state: string }[] };
      const p = view.instances.filter((i) => i.role === 'prefill' && i.state === 'serving').length;
      const d = view.instances.filter((i) => i.role === 'decode' && i.state === 'serving').length;
      last = `${p}P${d}D serving`;
      return p === config.p && d === config.d ? true : undefined;
    },
    60_000,
    () => last,
  );
}

/** `pdlink bench` as a child process; resolves with its report. */
async function bench(args: readonly string[]): Promise<{ runs: { summary: Summary; durationMs: number; roles?: { moves: unknown[] } }[] }> {
  const out = args[args.indexOf('--out') + 1]!;
  const child = spawn(process.execPath, [join(REPO, 'src', 'main.ts'), 'bench', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: REPO,
  });
  let errText = '';
  child.stderr!.on('data', (chunk: Buffer) => (errText = (errText + chunk.toString()).slice(-4000)));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`pdlink bench exited with ${code}: ${errText}`);
  return JSON.parse(readFileSync(`${out}.json`, 'utf8')) as Awaited<ReturnType<typeof bench>>;
}

const workloadArgs = (phase: 'first-half' | 'whole'): string[] => [
  '--rate',
  String(PHASE1.rate),
  '--input-len',
  String(PHASE1.input),
  '--output-len',
  String(PHASE1.output),
  '--prefix-share',
  '0',
  ...(phase === 'first-half'
    ? ['--max-requests', String(PHASE1.requests)]
    : [
        '--max-requests',
        String(PHASE1.requests + PHASE2.requests),
        '--shift-at',
        String(PHASE1.requests / (PHASE1.requests + PHASE2.requests)),
        '--then-rate',
        String(PHASE2.rate),
        '--then-input-len',
        String(PHASE2.input),
        '--then-output-len',
        String(PHASE2.output),
      ]),
];

async function withCluster<T>(
  config: Config,
  profile: string | undefined,
  run: (cluster: SimCluster, controller: string) => Promise<T>,
): Promise<T> {
  const cluster = await SimCluster.start({ prefill: config.p, decode: config.d, wire: false, engine: ENGINE });
  let controller: ManagedProcess | undefined;
  try {
    const topology = writeTopology(cluster, config, profile);
    controller = await spawnListening({
      name: 'controller',
      command: [process.execPath, join(REPO, 'src', 'main.ts'), 'controller', '--config', topology, '--manage_port', '0'],
      listeners: ['controller'],
    });
    const url = controller.urls['controller']!;
    await serving(url, config);
    return await run(cluster, url);
  } finally {
    await controller?.stop();
    await cluster.stop();
  }
}

async function runOne(
  phase: 'first-half' | 'whole',
  config: Config,
  round: number,
  profile: string | undefined,
  out: string,
): Promise<Row> {
  return withCluster(config, profile, async (cluster, controller) => {
    const before = loadavg()[0]!;
    const report = await bench([
      ...['--base-url', cluster.proxyUrl, '--model', cluster.model],
      ...workloadArgs(phase),
      ...['--duration-s', '600', '--seed', String(round + 1)],
      ...['--slo-ttft-ms', String(SLO.ttftMs), '--slo-tpot-ms', String(SLO.tpotMs)],
      ...['--controller-url', controller, '--out', join(WORK, 'report'), '--chart-library', 'beside'],
    ]);
    // Only the page is kept: the report's JSON holds every request (megabytes), the page its charts.
    copyFileSync(join(WORK, 'report.html'), `${out}.html`);
    const run = report.runs[0]!;
    const row: Row = {
      phase,
      config: config.name,
      round,
      summary: run.summary,
      durationS: run.durationMs / 1000,
      moves: run.roles?.moves.length ?? 0,
      load: [before, loadavg()[0]!],
    };
    const s = row.summary;
    log(
      `${phase} ${config.name} round ${round}: goodput ${s.goodput.requestsPerS.toFixed(2)} req/s (${(s.goodput.share * 100).toFixed(1)} %), ` +
        `TTFT p50/p99 ${s.ttftMs.p50?.toFixed(0)}/${s.ttftMs.p99?.toFixed(0)} ms, TPOT p50/p99 ${s.tpotMs.p50?.toFixed(1)}/${s.tpotMs.p99?.toFixed(1)} ms, ` +
        `${s.failed} failed, ${row.moves} moves, load ${row.load.map((l) => l.toFixed(1)).join('→')}`,
    );
    return row;
  });
}

/** The SLA planner's profile: `pdlink bench --profile` against one P and one D of the same engines. */
async function measureProfile(): Promise<string> {
  const path = join(RESULTS, 'planner-profile.json');
  await withCluster({ name: '1P1D', p: 1, d: 1, mode: 'off' }, undefined, async (cluster) => {
    const child = spawn(
      process.execPath,
      [
        join(REPO, 'src', 'main.ts'),
        'bench',
        ...['--profile', path, '--base-url', cluster.proxyUrl, '--model', cluster.model],
        ...['--input-len', String(PHASE1.input), '--rates', '2,4,5,6,7', '--decode-input-len', String(PHASE2.input)],
        ...['--output-len', String(PHASE2.output), '--concurrency', '4,8,16,24,32', '--max-requests', '40'],
      ],
      { stdio: ['ignore', 'inherit', 'pipe'], cwd: REPO },
    );
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`pdlink bench --profile exited with ${code}`);
  });
  return path;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const rows: Row[] = [];
const splits: Config[] = [
  { name: '1P3D', p: 1, d: 3, mode: 'off' },
  { name: '2P2D', p: 2, d: 2, mode: 'off' },
  { name: '3P1D', p: 3, d: 1, mode: 'off' },
];
log(`first half alone on each static split, ${ROUNDS} round(s)`);
for (let round = 0; round < ROUNDS; round++) {
  for (const config of round % 2 === 0 ? splits : [...splits].reverse()) {
    rows.push(await runOne('first-half', config, round, undefined, join(RESULTS, `planner-first-half-${config.name.toLowerCase()}`)));
  }
}
const firstHalf = splits.map((c) => ({
  config: c,
  goodput: median(rows.filter((r) => r.config === c.name).map((r) => r.summary.goodput.requestsPerS)),
}));
const best = firstHalf.reduce((a, b) => (b.goodput > a.goodput ? b : a)).config;
log(`the split a user would pick for the first half: ${best.name}`);

const profile = SLA ? await measureProfile() : undefined;
const whole: Config[] = [
  { name: `static ${best.name}`, p: best.p, d: best.d, mode: 'off' },
  { name: `planner load from ${best.name}`, p: best.p, d: best.d, mode: 'load' },
  ...(SLA ? [{ name: `planner sla from ${best.name}`, p: best.p, d: best.d, mode: 'sla' as const }] : []),
  ...(best.name === '2P2D' ? [] : [{ name: 'static 2P2D', p: 2, d: 2, mode: 'off' as const }]),
];
const outName = (c: Config): string =>
  c.mode !== 'off' ? `planner-${c.mode}` : c.name === `static ${best.name}` ? 'planner-off' : 'planner-2p2d';
for (let round = 0; round < ROUNDS; round++) {
  for (const config of round % 2 === 0 ? whole : [...whole].reverse()) {
    rows.push(await runOne('whole', config, round, profile, join(RESULTS, outName(config))));
  }
}

const wholeRows = rows.filter((r) => r.phase === 'whole');
const ratioOf = (name: string): number[] =>
  wholeRows
    .filter((r) => r.config === name)
    .map(
      (r) =>
        r.summary.goodput.requestsPerS /
        wholeRows.find((b) => b.config === whole[0]!.name && b.round === r.round)!.summary.goodput.requestsPerS,
    );
const table = markdownTable(
  [
    'phase',
    'config',
    'goodput req/s (median)',
    'vs static first-half split (min–max)',
    'met SLO',
    'TTFT p50 / p99 ms',
    'TPOT p50 / p99 ms',
    'failed',
    'moves',
    'load avg',
  ],
  [
    ...firstHalf.map(({ config }) => config.name).map((name) => ['first half', name] as const),
    ...whole.map((c) => ['whole', c.name] as const),
  ].map(([phase, name]) => {
    const mine = rows.filter((r) => r.config === name && (phase === 'whole') === (r.phase === 'whole'));
    const last = mine.at(-1)!.summary;
    const ratios = phase === 'whole' ? ratioOf(name) : [];
    const f = (x: number | null, d = 0): string => (x === null ? '–' : x.toFixed(d));
    return [
      phase,
      name,
      median(mine.map((r) => r.summary.goodput.requestsPerS)).toFixed(2),
      ratios.length === 0 ? '–' : `${times(median(ratios))} (${times(Math.min(...ratios))}–${times(Math.max(...ratios))})`,
      `${(median(mine.map((r) => r.summary.goodput.share)) * 100).toFixed(1)} %`,
      `${f(last.ttftMs.p50)} / ${f(last.ttftMs.p99)}`,
      `${f(last.tpotMs.p50, 1)} / ${f(last.tpotMs.p99, 1)}`,
      String(mine.reduce((n, r) => n + r.summary.failed, 0)),
      mine.map((r) => r.moves).join(', '),
      mine.map((r) => r.load.map((l) => l.toFixed(1)).join('→')).join(', '),
    ];
  }),
);
const load = median(ratioOf(whole[1]!.name));
const sla = SLA ? median(ratioOf(whole[2]!.name)) : undefined;
const summary =
  `Whole run (first ${PHASE1.requests} requests at ${PHASE1.rate}/s of ${PHASE1.input}-token prompts and ${PHASE1.output}-token answers, then ${PHASE2.requests} at ${PHASE2.rate}/s of ${PHASE2.input} and ${PHASE2.output}): ` +
  `the load planner's goodput is ${times(load)} that of ${best.name}, the static split a user would pick from the first half` +
  `${sla === undefined ? '' : `; the SLA planner's ${times(sla)}`} (goal ≥ 1.3×: ${load >= 1.3 ? 'met' : 'not met'}). ` +
  `SLO TTFT ≤ ${SLO.ttftMs} ms and TPOT ≤ ${SLO.tpotMs} ms; ${ROUNDS} alternating rounds, median; the 2-core machine was shared (load average per run in the table).`;
console.log(`\n${summary}\n\n${table}`);
writeResults('planner', {
  json: {
    question:
      'On 4 simulated instances and a workload that shifts halfway from prefill-heavy to decode-heavy, how much goodput does the P:D planner keep against the best static split for the first half?',
    engine: ENGINE,
    phases: [PHASE1, PHASE2],
    slo: SLO,
    planner: { ...PLANNER_TIMING, load: LOAD },
    rounds: ROUNDS,
    firstHalfBest: best.name,
    ratios: { load: ratioOf(whole[1]!.name), ...(SLA ? { sla: ratioOf(whole[2]!.name) } : {}) },
    rows,
  },
  markdownTable: `${table}\n\nReports (last round): [planner off](planner-off.html), [planner load](planner-load.html)${SLA ? ', [planner sla](planner-sla.html)' : ''}${best.name === '2P2D' ? '' : ', [static 2P2D](planner-2p2d.html)'}.`,
  summary,
});
