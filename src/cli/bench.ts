/**
 * `pdlink bench`: measures what a serving user feels (TTFT, TPOT, end to end, goodput under SLOs)
 * on any OpenAI-compatible endpoint, replaying a Mooncake trace or a synthetic workload, and
 * writes a JSON report and an HTML page with charts. Ctrl-C writes the report of what was measured.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { runBench } from '../harness/bench-run.ts';
import { writeChartLibrary } from '../harness/chart-library.ts';
import { renderHtml } from '../harness/html.ts';
import { progressFor } from '../harness/progress.ts';
import { parseLength, type LengthDistribution } from '../harness/random.ts';
import type { BenchReport } from '../harness/report.ts';
import { syntheticWorkload } from '../harness/synthetic.ts';
import type { Endpoint, Target } from '../harness/target.ts';
import { parseTrace } from '../harness/trace.ts';
import type { Workload } from '../harness/workload.ts';
import { parseTenants, tenantSynthetic, withTenants, type TenantMix } from '../harness/tenants.ts';
import { ConfigError } from '../core/errors.ts';
import { parseStringOptions } from './common.ts';
import { shutdownSignals } from './shutdown.ts';

export const BENCH_HELP = `Usage: pdlink bench --base-url URL [options]

Sends a workload to an OpenAI-compatible endpoint (pdlink's proxy, vLLM, any engine), streaming,
and reports TTFT, inter-token latency, TPOT, end to end, throughput and goodput. Writes
<out>.json (schema pdlink-bench-report, version 2) and <out>.html (charts, opens offline).
Progress goes to stderr; Ctrl-C stops and writes the report of what was measured.

Target:
  --base-url URL            e.g. http://127.0.0.1:1025 (required)
  --endpoint KIND           completions | chat (default completions)
  --model NAME              model name (default: the first of GET <base-url>/v1/models)
  --request-timeout-s S     bound on one request (default 300)

Workload (a trace when --trace is given, else synthetic):
  --trace FILE              Mooncake-format JSONL (timestamp, input_length, output_length, hash_ids)
  --time-scale X            arrival times × X (default 1; 0.1 replays ten times faster)
  --length-scale X          prompt lengths and block size × X (default 1)
  --output-scale X          completion lengths × X (default: the length scale)
  --rate R                  synthetic: Poisson arrivals per second (default 1)
  --input-len DIST          synthetic prompt tokens: N, uniform:MIN:MAX, exponential:MEAN,
                            lognormal:MEAN:CV (default 512)
  --output-len DIST         synthetic completion tokens (default 64)
  --prefix-share F          synthetic: share of each prompt's blocks from a shared prefix (default 0.5)
  --prefix-groups N         synthetic: number of shared prefixes (default 8)
  --block-tokens N          synthetic: tokens per hash block (default 512)
  --seed N                  synthetic: random seed (default 1)
  --tenants LIST            NAME:CLASS:RATE,... : each request is sent as a tenant with a priority
                            class (pdlink's x-pdlink-tenant and x-pdlink-priority headers) and the
                            report summarises each tenant; synthetic: each tenant its own Poisson
                            stream at RATE per second (--rate is then unused); trace: requests dealt
                            to the tenants in proportion to RATE

Runs and bounds:
  --concurrency LIST        closed-loop sweep, e.g. 1,2,4,8 (default: open-loop replay at the arrival times)
  --max-requests N          requests per run (default: the whole trace; 200 synthetic)
  --duration-s S            time bound per run (default 600)

Report:
  --slo-ttft-ms MS          goodput counts requests with TTFT ≤ MS
  --slo-tpot-ms MS          …and TPOT ≤ MS
  --out PREFIX              output files PREFIX.json and PREFIX.html (default pdlink-bench-<time>)
  --chart-library WHERE     inline (default: the page carries uPlot) | beside (the page references
                            uPlot's two files, written once into its directory: for many reports)
  -h, --help                show this help
`;

const OPTIONS = [
  'base-url',
  'endpoint',
  'model',
  'request-timeout-s',
  'trace',
  'time-scale',
  'length-scale',
  'output-scale',
  'rate',
  'input-len',
  'output-len',
  'prefix-share',
  'prefix-groups',
  'block-tokens',
  'seed',
  'tenants',
  'concurrency',
  'max-requests',
  'duration-s',
  'slo-ttft-ms',
  'slo-tpot-ms',
  'out',
  'chart-library',
] as const;

type Values = Partial<Record<(typeof OPTIONS)[number], string>>;

/**
 * Runs the benchmark the arguments describe and writes its report.
 * @example await runBenchCommand(['--base-url', 'http://127.0.0.1:1025', '--trace', 'trace.jsonl', '--time-scale', '0.1']);
 */
export async function runBenchCommand(argv: string[]): Promise<void> {
  const shutdown = shutdownSignals();
  const { values, help } = parseStringOptions(argv, OPTIONS, BENCH_HELP);
  if (help) {
    console.log(BENCH_HELP);
    return;
  }
  const baseUrl = values['base-url'];
  if (baseUrl === undefined) throw new ConfigError(`--base-url: required\n\n${BENCH_HELP}`);
  if (!/^https?:\/\/[^/]+/.test(baseUrl)) throw new ConfigError(`--base-url: must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
  const endpoint = values.endpoint ?? 'completions';
  if (endpoint !== 'completions' && endpoint !== 'chat')
    throw new ConfigError(`--endpoint: must be completions or chat, got ${JSON.stringify(endpoint)}`);
  const requestTimeoutMs = num(values, 'request-timeout-s', 300, { min: 0, exclusive: true }) * 1000;
  const workload = loadWorkload(values);
  const maxRequests = int(values, 'max-requests', values.trace === undefined ? workload.items.length : Number.MAX_SAFE_INTEGER, 1);
  const durationMs = num(values, 'duration-s', 600, { min: 0, exclusive: true }) * 1000;
  const concurrency = values.concurrency === undefined ? [] : parseLevels(values.concurrency);
  const slo = {
    ttftMs: values['slo-ttft-ms'] === undefined ? null : num(values, 'slo-ttft-ms', 0, { min: 0, exclusive: true }),
    tpotMs: values['slo-tpot-ms'] === undefined ? null : num(values, 'slo-tpot-ms', 0, { min: 0, exclusive: true }),
  };
  const chartLibrary = values['chart-library'] ?? 'inline';
  if (chartLibrary !== 'inline' && chartLibrary !== 'beside')
    throw new ConfigError(`--chart-library: must be inline or beside, got ${JSON.stringify(chartLibrary)}`);
  const out = values.out ?? `pdlink-bench-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const model = values.model ?? (await firstModel(baseUrl));
  const target: Target = { baseUrl, endpoint: endpoint as Endpoint, model, requestTimeoutMs };

  const stop = new AbortController();
  void shutdown.received().then(() => stop.abort());
  const settings: Record<string, string | number | boolean | null> = {};
  for (const name of OPTIONS) settings[name] = values[name] ?? null;
  const report = await runBench(
    { target, workload, maxRequests, durationMs, concurrency, slo, settings },
    stop.signal,
    progressFor(process.stderr),
  );
  writeFileSync(`${out}.json`, `${JSON.stringify(report, null, 2)}\n`);
  if (chartLibrary === 'beside') writeChartLibrary(dirname(out));
  writeFileSync(`${out}.html`, renderHtml(report, { chartLibrary }));
  console.log(summaryText(report));
  console.log(`pdlink bench: ${report.partial ? 'partial ' : ''}report written to ${out}.json and ${out}.html`);
}

function loadWorkload(values: Values): Workload {
  if (values.trace !== undefined) {
    let text: string;
    try {
      text = readFileSync(values.trace, 'utf8');
    } catch (err) {
      throw new ConfigError(`--trace: cannot read ${values.trace}: ${(err as Error).message}`);
    }
    const lengthScale = num(values, 'length-scale', 1, { min: 0, exclusive: true });
    const scaling = {
      timeScale: num(values, 'time-scale', 1, { min: 0, exclusive: true }),
      lengthScale,
      outputScale: num(values, 'output-scale', lengthScale, { min: 0, exclusive: true }),
      maxRequests: int(values, 'max-requests', Number.MAX_SAFE_INTEGER, 1),
    };
    let trace: Workload;
    try {
      trace = parseTrace(text, values.trace, scaling);
    } catch (err) {
      throw new ConfigError(`--trace: ${values.trace}: ${(err as Error).message}`);
    }
    const tenants = tenantsOf(values);
    return tenants === undefined ? trace : withTenants(trace, tenants, int(values, 'seed', 1, 0));
  }
  const tenants = tenantsOf(values);
  const synthetic = {
    requests: int(values, 'max-requests', 200, 1),
    rate: num(values, 'rate', 1, { min: 0, exclusive: true }),
    input: length(values, 'input-len', '512'),
    output: length(values, 'output-len', '64'),
    prefixShare: num(values, 'prefix-share', 0.5, { min: 0, max: 1 }),
    prefixGroups: int(values, 'prefix-groups', 8, 1),
    blockTokens: int(values, 'block-tokens', 512, 1),
    seed: int(values, 'seed', 1, 0),
  };
  return tenants === undefined ? syntheticWorkload(synthetic) : tenantSynthetic(synthetic, tenants);
}

function tenantsOf(values: Values): TenantMix[] | undefined {
  if (values.tenants === undefined) return undefined;
  try {
    return parseTenants(values.tenants);
  } catch (err) {
    throw new ConfigError(`--tenants: ${(err as Error).message}`);
  }
}

function num(values: Values, name: keyof Values, fallback: number, range: { min: number; max?: number; exclusive?: boolean }): number {
  const text = values[name];
  if (text === undefined) return fallback;
  const value = Number(text);
  const low = range.exclusive === true ? value > range.min : value >= range.min;
  if (text.trim() === '' || !Number.isFinite(value) || !low || (range.max !== undefined && value > range.max)) {
    const bound =
      range.max !== undefined ? `in [${range.min}, ${range.max}]` : range.exclusive === true ? `> ${range.min}` : `≥ ${range.min}`;
    throw new ConfigError(`--${name}: must be a number ${bound}, got ${JSON.stringify(text)}`);
  }
  return value;
}

function int(values: Values, name: keyof Values, fallback: number, min: number): number {
  const text = values[name];
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text)))
    throw new ConfigError(`--${name}: must be an integer ≥ ${min}, got ${JSON.stringify(text)}`);
  return Number(text);
}

function length(values: Values, name: 'input-len' | 'output-len', fallback: string): LengthDistribution {
  try {
    return parseLength(values[name] ?? fallback);
  } catch (err) {
    throw new ConfigError(`--${name}: ${(err as Error).message}`);
  }
}

function parseLevels(text: string): number[] {
  const levels = text.split(',').map((s) => s.trim());
  if (levels.some((s) => !/^\d+$/.test(s) || Number(s) < 1))
    throw new ConfigError(`--concurrency: must be a comma-separated list of integers ≥ 1, got ${JSON.stringify(text)}`);
  return levels.map(Number);
}

async function firstModel(baseUrl: string): Promise<string> {
  const url = `${baseUrl.replace(/\/+$/, '')}/v1/models`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as { data?: { id?: unknown }[] };
    const id = body.data?.[0]?.id;
    if (res.ok && typeof id === 'string') return id;
    throw new Error(`answered ${res.status} without a model`);
  } catch (err) {
    throw new ConfigError(`--model: not given, and GET ${url} did not name one (${(err as Error).message}); pass --model`);
  }
}

function summaryText(report: BenchReport): string {
  const f = (x: number | null): string => (x === null ? '-' : x.toFixed(1));
  const lines: string[] = [];
  for (const run of report.runs) {
    const s = run.summary;
    lines.push(
      `run ${run.label}: ${s.requests} requests in ${(run.durationMs / 1000).toFixed(1)} s (${run.stoppedBy}), ` +
        `${s.completed} ok, ${s.failed} failed ${JSON.stringify(s.errorsByStatus)}, ${s.cut} cut`,
    );
    lines.push(`  ${'ms'.padEnd(12)}${['p50', 'p90', 'p99', 'mean'].map((h) => h.padStart(10)).join('')}`);
    for (const [name, p] of [
      ['TTFT', s.ttftMs],
      ['TPOT', s.tpotMs],
      ['ITL', s.itlMs],
      ['E2E', s.e2eMs],
      ['send drift', s.driftMs],
    ] as const) {
      lines.push(`  ${name.padEnd(12)}${[p.p50, p.p90, p.p99, p.mean].map((x) => f(x).padStart(10)).join('')}`);
    }
    lines.push(
      `  throughput ${s.throughput.requestsPerS.toFixed(2)} req/s, ${s.throughput.outputTokensPerS.toFixed(1)} tok/s; ` +
        `goodput ${s.goodput.requestsPerS.toFixed(2)} req/s (${(s.goodput.share * 100).toFixed(1)} % met the SLO)`,
    );
    for (const [tenant, t] of Object.entries(run.byTenant ?? {})) {
      lines.push(
        `  tenant ${tenant}: ${t.completed}/${t.requests} ok ${JSON.stringify(t.errorsByStatus)}, TTFT p50/p99 ${f(t.ttftMs.p50)}/${f(t.ttftMs.p99)} ms, ` +
          `goodput ${t.goodput.requestsPerS.toFixed(2)} req/s (${(t.goodput.share * 100).toFixed(1)} %)`,
      );
    }
  }
  return lines.join('\n');
}
