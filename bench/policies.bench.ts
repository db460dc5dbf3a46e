/**
 * Question: which scheduling policy gives a 2 P + 2 D deployment the most goodput under Mooncake's
 * traces, and does conditional disaggregation help? Goal: cache_affinity ≥ 1.3× round_robin's
 * goodput on the synthetic trace at the same load.
 *
 * Set-up: for every (trace, policy, conditional disaggregation on/off) a fresh simulated cluster
 * (src/sim/cluster/cluster.ts) of 2 prefill and 2 decode `pdlink sim-engine` processes with the prefix cache
 * and the batch-size decode model, and `pdlink bench` as a child process replaying the first
 * POLICIES_BENCH_REQUESTS requests of the trace open loop, scaled to fit two shared cores (see
 * TRACES below). Rounds alternate the configurations, so drift of the shared machine spreads over
 * all of them; goodput ratios are against round_robin of the same round. Conditional
 * disaggregation here is `max_local_prefill_length` = LOCAL_PREFILL tokens.
 *
 * Run: `bun bench/policies.bench.ts` (or `npm run bench -- policies`); results in
 * bench/results/policies.{json,md} and one harness report per trace, policy and round's last run in
 * bench/results/policies-<trace>-<config>.{json,html}.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SimCluster } from '../src/sim/cluster/cluster.ts';

const REPO = join(import.meta.dir, '..');
const TRACE_DIR = [process.env['PDLINK_TRACES'], join(REPO, '..', 'shared', 'traces'), join(REPO, '..', '..', 'shared', 'traces')]
  .filter((dir): dir is string => dir !== undefined)
  .find((dir) => existsSync(join(dir, 'mooncake_synthetic_trace.jsonl')));
const REQUESTS = process.env['POLICIES_BENCH_REQUESTS'] ?? '4000';
const ROUNDS = Number(process.env['POLICIES_BENCH_ROUNDS'] ?? '2');
const ONLY = process.env['POLICIES_BENCH_ONLY'];
const ONLY_TRACE = process.env['POLICIES_BENCH_TRACE'];
const LOCAL_PREFILL = 48;

/** The engines: slow prefill (the resource the policies compete for), a small prefix cache. */
const ENGINE = {
  numBlocks: 16_384,
  maxModelLen: 16_384,
  blockTokens: 16,
  prefillMsPerToken: Number(process.env['POLICIES_BENCH_PREFILL_MS'] ?? '0.14'),
  decodeMsPerToken: 5,
  decodeBatchSlowdown: 0.05,
  prefixCacheBlocks: 4096,
};
const SLO = { ttftMs: 2000, tpotMs: 25 };

const TRACES = [
  {
    name: 'synthetic',
    file: 'mooncake_synthetic_trace.jsonl',
    timeScale: process.env['POLICIES_BENCH_TIME_SCALE'] ?? '0.06',
    lengthScale: '0.02',
    requests: REQUESTS,
  },
  { name: 'conversation', file: 'mooncake_conversation_trace.jsonl', timeScale: '0.06', lengthScale: '0.02', requests: '2000' },
] as const;

const POLICIES = ['round_robin', 'load_balance', 'power_of_two', 'cache_affinity'] as const;
const CONFIGS = POLICIES.flatMap((policy) => [
  { policy, local: false, name: policy },
  { policy, local: true, name: `${policy}+local` },
]);

interface Summary {
  requests: number;
  completed: number;
  failed: number;
  ttftMs: { p50: number; p90: number; p99: number };
  tpotMs: { p50: number; p90: number; p99: number };
  throughput: { requestsPerS: number };
  goodput: { requestsPerS: number; share: number };
}

interface Row {
  trace: string;
  config: string;
  round: number;
  summary: Summary;
  cacheHitShare: number;
  localShare: number;
}

if (TRACE_DIR === undefined) {
  console.error('policies bench: the Mooncake traces were not found: put ../shared/traces/ beside the repository or set PDLINK_TRACES');
  process.exit(1);
}

async function runOne(trace: (typeof TRACES)[number], config: (typeof CONFIGS)[number], round: number): Promise<Row> {
  const cluster = await SimCluster.start({
    prefill: 2,
    decode: 2,
    engine: ENGINE,
    coordinatorConfig: {
      scheduler: {
        policy: { prefill: config.policy, decode: 'load_balance' },
        ...(config.local ? { conditional_disaggregation: { max_local_prefill_length: LOCAL_PREFILL } } : {}),
      },
    },
  });
  const out = join('bench', 'results', `policies-${trace.name}-${config.name.replace('+', '-')}`);
  try {
    const args = [
      join(REPO, 'src', 'main.ts'),
      'bench',
      ...['--base-url', cluster.proxyUrl, '--model', cluster.model],
      ...['--trace', relative(REPO, join(TRACE_DIR!, trace.file))],
      ...['--time-scale', trace.timeScale, '--length-scale', trace.lengthScale],
      ...['--max-requests', trace.requests, '--duration-s', '300'],
      ...['--slo-ttft-ms', String(SLO.ttftMs), '--slo-tpot-ms', String(SLO.tpotMs)],
      ...['--out', out, '--chart-library', 'beside'],
    ];
    // The per-request progress lines would drown the table: kept, and shown only on a failure.
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: REPO });
    let errText = '';
    child.stderr!.on('data', (chunk: Buffer) => (errText = (errText + chunk.toString()).slice(-4000)));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`pdlink bench exited with ${code}: ${errText}`);
    const report = JSON.parse(readFileSync(join(REPO, `${out}.json`), 'utf8')) as { runs: { summary: Summary }[] };
    let prompt = 0;
    let hit = 0;
    let local = 0;
    let legs = 0;
    for (const engine of cluster.engines) {
      const status = (await (await cluster.fetch(`${engine.manageUrl}/sim/status`)).json()) as {
        requests: { prefill: number; local: number };
        prefix_cache: { prompt_tokens: number; hit_tokens: number };
      };
      prompt += status.prefix_cache.prompt_tokens;
      hit += status.prefix_cache.hit_tokens;
      local += status.requests.local;
      legs += status.requests.prefill + status.requests.local;
    }
    return {
      trace: trace.name,
      config: config.name,
      round,
      summary: report.runs[0]!.summary,
      cacheHitShare: prompt === 0 ? 0 : hit / prompt,
      localShare: legs === 0 ? 0 : local / legs,
    };
  } finally {
    await cluster.stop();
  }
}

const rows: Row[] = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const trace of TRACES) {
    if (ONLY_TRACE !== undefined && trace.name !== ONLY_TRACE) continue;
    // Alternate the order each round so no configuration always runs first on a cold machine.
    const order = round % 2 === 0 ? CONFIGS : [...CONFIGS].reverse();
    for (const config of order) {
      if (ONLY !== undefined && !ONLY.split(',').includes(config.name)) continue;
      const row = await runOne(trace, config, round);
      rows.push(row);
      const s = row.summary;
      console.log(
        `round ${round} ${trace.name} ${config.name}: goodput ${s.goodput.requestsPerS.toFixed(2)} req/s (${(s.goodput.share * 100).toFixed(1)} %), TTFT p50/p99 ${s.ttftMs.p50.toFixed(0)}/${s.ttftMs.p99.toFixed(0)} ms, TPOT p50/p99 ${s.tpotMs.p50.toFixed(1)}/${s.tpotMs.p99.toFixed(1)} ms, cache hits ${(row.cacheHitShare * 100).toFixed(0)} %, local ${(row.localShare * 100).toFixed(0)} %, failed ${s.failed}`,
      );
    }
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const lines = [
  '# Scheduling policies under Mooncake traces (2 P + 2 D, simulated)',
  '',
  `Engines: ${JSON.stringify(ENGINE)}; SLO TTFT ≤ ${SLO.ttftMs} ms and TPOT ≤ ${SLO.tpotMs} ms; ${TRACES.map((t) => `${t.name}: the first ${t.requests} requests, time × ${t.timeScale}, lengths × ${t.lengthScale}`).join('; ')}; ${ROUNDS} alternating rounds; "+local" = conditional disaggregation with max_local_prefill_length ${LOCAL_PREFILL}. Goodput ratio: against round_robin of the same round, median over rounds (min–max). The 2-core machine was shared with other test runs.`,
  '',
  '| trace | config | goodput req/s (median) | ratio vs round_robin (min–max) | goodput share | TTFT p50 / p90 / p99 ms | TPOT p50 / p90 / p99 ms | prefix-cache hits | local prefills | failed |',
  '|---|---|---|---|---|---|---|---|---|---|',
];
for (const trace of TRACES) {
  for (const config of CONFIGS) {
    const mine = rows.filter((r) => r.trace === trace.name && r.config === config.name);
    if (mine.length === 0) continue;
    const ratios = mine
      .map((r) => {
        const base = rows.find((b) => b.trace === trace.name && b.config === 'round_robin' && b.round === r.round);
        return base === undefined ? NaN : r.summary.goodput.requestsPerS / base.summary.goodput.requestsPerS;
      })
      .filter((x) => Number.isFinite(x));
    const last = mine.at(-1)!.summary;
    const f = (x: number, d = 0) => x.toFixed(d);
    lines.push(
      `| ${trace.name} | ${config.name} | ${f(median(mine.map((r) => r.summary.goodput.requestsPerS)), 2)} | ${ratios.length === 0 ? '–' : `${f(median(ratios), 2)}× (${f(Math.min(...ratios), 2)}–${f(Math.max(...ratios), 2)})`} | ${f(median(mine.map((r) => r.summary.goodput.share * 100)), 1)} % | ${f(last.ttftMs.p50)} / ${f(last.ttftMs.p90)} / ${f(last.ttftMs.p99)} | ${f(last.tpotMs.p50, 1)} / ${f(last.tpotMs.p90, 1)} / ${f(last.tpotMs.p99, 1)} | ${f(median(mine.map((r) => r.cacheHitShare * 100)))} % | ${f(median(mine.map((r) => r.localShare * 100)))} % | ${mine.reduce((n, r) => n + r.summary.failed, 0)} |`,
    );
  }
}
const md = `${lines.join('\n')}\n`;
console.log(md);
writeFileSync(join(REPO, 'bench', 'results', 'policies.md'), md);
writeFileSync(
  join(REPO, 'bench', 'results', 'policies.json'),
  `${JSON.stringify({ engine: ENGINE, slo: SLO, requests: Number(REQUESTS), rounds: ROUNDS, localPrefill: LOCAL_PREFILL, rows }, null, 2)}\n`,
);
