/**
 * Question: when a batch tenant offers five times what the cluster can serve, does the interactive
 * tenant keep its TTFT and its goodput? Goal: with admission, its TTFT p99 within 1.5× and its
 * goodput within 10 % of its values when it runs alone; without admission (the instant-429 proxy,
 * the same load) the same figures for comparison.
 *
 * Set-up: for each configuration a fresh simulated cluster (src/sim/cluster/cluster.ts) of one prefill and
 * one decode `pdlink sim-engine` process, prefill-bound (PREFILL_MS_PER_TOKEN per prompt token,
 * prompts of INPUT tokens: P serves about CAPACITY requests per second), and `pdlink bench` as a child
 * process with `--tenants`: `chat` (class interactive) at CHAT_RATE/s and, except when alone, `bulk`
 * (class batch) at FLOOD × CAPACITY per second, open loop for ARRIVAL_S seconds of arrivals. The
 * configurations: `alone` (chat only, admission on), `without` (admission off: today's proxy),
 * `with` (admission: interactive above batch, one prefill in flight per P), `with+preemption`.
 * Rounds alternate the order. The load generator runs on CPU 1 (`taskset`), the cluster wherever
 * the script runs: run the script pinned to CPU 0.
 *
 * Run: `taskset -c 0 bun bench/admission.bench.ts` (ADMISSION_BENCH_ROUNDS=N, ADMISSION_BENCH_ONLY=a,b,
 * ADMISSION_BENCH_FROM=<a results JSON> to write the results of rows measured before);
 * results in bench/results/admission.{json,md}.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { markdownTable, writeResults } from './lib.ts';

const REPO = join(import.meta.dir, '..');
const ROUNDS = Number(process.env['ADMISSION_BENCH_ROUNDS'] ?? '2');
const ONLY = process.env['ADMISSION_BENCH_ONLY']?.split(',');

const INPUT = 256;
const OUTPUT = 16;
const PREFILL_MS_PER_TOKEN = 1;
/** Prefills per second one P can do. */
const CAPACITY = 1000 / (INPUT * PREFILL_MS_PER_TOKEN);
const FLOOD = 5;
const CHAT_RATE = 0.8;
const ARRIVAL_S = Number(process.env['ADMISSION_BENCH_ARRIVAL_S'] ?? '60');
const SLO = { ttftMs: 1500 };
const ENGINE = {
  numBlocks: 16_384,
  maxModelLen: 16_384,
  blockTokens: 16,
  prefillMsPerToken: PREFILL_MS_PER_TOKEN,
  decodeMsPerToken: 5,
  decodeBatchSlowdown: 0.02,
  prefixCacheBlocks: 0,
};

const ADMISSION = {
  classes: [
    { name: 'interactive', queue_timeout_ms: 10_000 },
    { name: 'batch', queue_timeout_ms: 20_000 },
  ],
  tenants: { chat: { class: 'interactive' }, bulk: { class: 'batch' } },
  prefill: { max_in_flight_per_instance: 1 },
  decode: { max_in_flight_per_instance: 32 },
  max_queued: 4096,
};

const CONFIGS = [
  { name: 'alone', flood: false, admission: ADMISSION },
  { name: 'without', flood: true, admission: { enabled: false } },
  { name: 'with', flood: true, admission: ADMISSION },
  { name: 'with+preemption', flood: true, admission: { ...ADMISSION, preemption: true } },
] as const;

interface Summary {
  requests: number;
  completed: number;
  failed: number;
  cut: number;
  errorsByStatus: Record<string, number>;
  ttftMs: { p50: number | null; p90: number | null; p99: number | null };
  goodput: { requests: number; requestsPerS: number; share: number };
  throughput: { requestsPerS: number };
}

interface Row {
  config: string;
  round: number;
  /** Chat requests that met the SLO, per second of arrivals (runs differ in how long their tail lasts). */
  chatGoodput: number;
  chat: Summary;
  bulk: Summary | null;
  durationMs: number;
}

async function runOne(config: (typeof CONFIGS)[number], round: number): Promise<Row> {
  const cluster = await SimCluster.start({
    prefill: 1,
    decode: 1,
    engine: ENGINE,
    coordinatorConfig: { pdlink: { admission: config.admission } },
  });
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-admission-bench-'));
  try {
    const chatRequests = Math.round(CHAT_RATE * ARRIVAL_S);
    const bulkRate = FLOOD * CAPACITY;
    const tenants = config.flood ? `chat:interactive:${CHAT_RATE},bulk:batch:${bulkRate}` : `chat:interactive:${CHAT_RATE}`;
    const requests = config.flood ? Math.round((CHAT_RATE + bulkRate) * ARRIVAL_S) : chatRequests;
    const args = [
      join(REPO, 'src', 'main.ts'),
      'bench',
      ...['--base-url', cluster.proxyUrl, '--model', cluster.model],
      ...['--tenants', tenants, '--max-requests', String(requests), '--seed', String(round + 1)],
      ...['--input-len', String(INPUT), '--output-len', String(OUTPUT), '--prefix-share', '0', '--block-tokens', '16'],
      ...['--duration-s', String(ARRIVAL_S + 40), '--request-timeout-s', '120', '--slo-ttft-ms', String(SLO.ttftMs)],
      ...['--out', join(dir, 'report')],
    ];
    const pinned = existsSync('/usr/bin/taskset') ? ['/usr/bin/taskset', '-c', '1', process.execPath] : [process.execPath];
    const child = spawn(pinned[0]!, [...pinned.slice(1), ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      cwd: REPO,
      // Bun's fetch runs at most 256 requests at once by default: the client must not queue requests itself.
      env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: '65535' },
    });
    let errText = '';
    child.stderr!.on('data', (chunk: Buffer) => (errText = (errText + chunk.toString()).slice(-4000)));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`pdlink bench exited with ${code}: ${errText}`);
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as {
      runs: { durationMs: number; byTenant: Record<string, Summary> }[];
    };
    const run = report.runs[0]!;
    const chat = run.byTenant['chat']!;
    return {
      config: config.name,
      round,
      chatGoodput: chat.goodput.requests / ARRIVAL_S,
      chat,
      bulk: run.byTenant['bulk'] ?? null,
      durationMs: run.durationMs,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await cluster.stop();
  }
}

/** Re-renders the results from a previous run's rows (ADMISSION_BENCH_FROM=bench/results/admission.json) instead of running. */
const FROM = process.env['ADMISSION_BENCH_FROM'];
const rows: Row[] = FROM === undefined ? [] : (JSON.parse(readFileSync(FROM, 'utf8')) as { rows: Row[] }).rows;
const rounds = FROM === undefined ? ROUNDS : new Set(rows.map((r) => r.round)).size;
for (let round = 0; FROM === undefined && round < ROUNDS; round++) {
  const order = round % 2 === 0 ? CONFIGS : [...CONFIGS].reverse();
  for (const config of order) {
    if (ONLY !== undefined && !ONLY.includes(config.name)) continue;
    const row = await runOne(config, round);
    rows.push(row);
    const c = row.chat;
    console.log(
      `round ${round} ${config.name}: chat TTFT p50/p99 ${c.ttftMs.p50?.toFixed(0)}/${c.ttftMs.p99?.toFixed(0)} ms, goodput ${row.chatGoodput.toFixed(3)} req/s (${(c.goodput.share * 100).toFixed(1)} %), ${c.completed}/${c.requests} ok ${JSON.stringify(c.errorsByStatus)}` +
        (row.bulk === null
          ? ''
          : `; bulk ${row.bulk.completed}/${row.bulk.requests} ok ${JSON.stringify(row.bulk.errorsByStatus)}, ${row.bulk.cut} cut`),
    );
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const f = (x: number | null | undefined, d = 0): string => (x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));
/** Per-round ratios of a figure against `alone` of the same round. */
const ratios = (config: string, pick: (r: Row) => number | null): number[] =>
  rows
    .filter((r) => r.config === config)
    .map((r) => {
      const base = rows.find((b) => b.config === 'alone' && b.round === r.round);
      const a = pick(r);
      const b = base === undefined ? null : pick(base);
      return a === null || b === null || b === 0 ? NaN : a / b;
    })
    .filter((x) => Number.isFinite(x));
const ratioText = (xs: number[]): string =>
  xs.length === 0 ? '–' : `${f(median(xs), 2)}× (${f(Math.min(...xs), 2)}–${f(Math.max(...xs), 2)})`;
const p99 = (r: Row): number | null => r.chat.ttftMs.p99;
const goodput = (r: Row): number => r.chatGoodput;
const verdict = (config: string): string => {
  const t = median(ratios(config, p99));
  const g = median(ratios(config, goodput));
  return `TTFT p99 ${f(t, 2)}× alone (goal ≤ 1.5×: ${t <= 1.5 ? 'met' : 'NOT MET'}), goodput ${f(g, 2)}× alone (goal ≥ 0.9×: ${g >= 0.9 ? 'met' : 'NOT MET'})`;
};
const summary =
  `An interactive tenant (chat, ${CHAT_RATE}/s) beside a batch tenant offering ${FLOOD}× what the cluster serves (${(FLOOD * CAPACITY).toFixed(1)}/s; one P prefilling ${INPUT}-token prompts at ${PREFILL_MS_PER_TOKEN} ms a token, about ${CAPACITY.toFixed(1)}/s), ` +
  `${ARRIVAL_S} s of Poisson arrivals, medians over ${rounds} alternating rounds of per-round ratios against chat alone: ` +
  `with admission ${verdict('with')}; with admission and preemption ${verdict('with+preemption')}; ` +
  `without admission (today's proxy) TTFT p99 ${f(median(ratios('without', p99)), 1)}× and goodput ${f(median(ratios('without', goodput)), 2)}× alone. ` +
  `Goodput: chat requests with TTFT ≤ ${SLO.ttftMs} ms per second of arrivals. Load generator on CPU 1, cluster on CPU 0 of the shared 2-core machine.`;
const table = markdownTable(
  [
    'config',
    'chat TTFT p50 / p99 ms (median)',
    'p99 vs alone (min–max)',
    'chat goodput req/s',
    'goodput vs alone (min–max)',
    'chat ok / sent (last round)',
    'bulk ok / sent, refused, cut (last round)',
  ],
  CONFIGS.flatMap((config) => {
    const mine = rows.filter((r) => r.config === config.name);
    if (mine.length === 0) return [];
    const last = mine.at(-1)!;
    return [
      [
        config.name,
        `${f(median(mine.map((r) => r.chat.ttftMs.p50 ?? NaN)))} / ${f(median(mine.map((r) => r.chat.ttftMs.p99 ?? NaN)))}`,
        ratioText(ratios(config.name, p99)),
        f(median(mine.map(goodput)), 3),
        ratioText(ratios(config.name, goodput)),
        `${last.chat.completed} / ${last.chat.requests}`,
        last.bulk === null
          ? '–'
          : `${last.bulk.completed} / ${last.bulk.requests}, ${JSON.stringify(last.bulk.errorsByStatus)}, ${last.bulk.cut}`,
      ],
    ];
  }),
);
console.log(`${summary}\n\n${table}`);
writeResults('admission', {
  summary,
  markdownTable: table,
  json: {
    input: INPUT,
    output: OUTPUT,
    engine: ENGINE,
    capacityPerS: CAPACITY,
    chatRate: CHAT_RATE,
    flood: FLOOD,
    arrivalS: ARRIVAL_S,
    slo: SLO,
    admission: ADMISSION,
    rounds,
    rows,
  },
});
