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
import { BENCH_HELP } from './bench-help.ts';
import { firstModel, int, num, parseLevels } from './bench-values.ts';
import { runProfileCommand } from './bench-profile.ts';

export { BENCH_HELP } from './bench-help.ts';

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
  'then-rate',
  'then-input-len',
  'then-output-len',
  'shift-at',
  'tenants',
  'concurrency',
  'max-requests',
  'duration-s',
  'slo-ttft-ms',
  'slo-tpot-ms',
  'out',
  'chart-library',
  'controller-url',
] as const;

type Values = Partial<Record<(typeof OPTIONS)[number], string>>;

/**
 * Runs the benchmark the arguments describe and writes its report.
 * @example await runBenchCommand(['--base-url', 'http://127.0.0.1:1025', '--trace', 'trace.jsonl', '--time-scale', '0.1']);
 */
export async function runBenchCommand(argv: string[]): Promise<void> {
  // The profile mode has options of its own.
  if (argv.some((a) => a === '--profile' || a.startsWith('--profile='))) return runProfileCommand(argv);
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
  const controllerUrl = values['controller-url'];
  if (controllerUrl !== undefined && !/^https?:\/\/[^/]+/.test(controllerUrl))
    throw new ConfigError(`--controller-url: must be an http(s) URL, got ${JSON.stringify(controllerUrl)}`);

  const stop = new AbortController();
  void shutdown.received().then(() => stop.abort());
  const settings: Record<string, string | number | boolean | null> = {};
  for (const name of OPTIONS) settings[name] = values[name] ?? null;
  const report = await runBench(
    { target, workload, maxRequests, durationMs, concurrency, slo, settings, ...(controllerUrl === undefined ? {} : { controllerUrl }) },
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
    const shift = (['then-rate', 'then-input-len', 'then-output-len', 'shift-at'] as const).find((name) => values[name] !== undefined);
    if (shift !== undefined) throw new ConfigError(`--${shift}: a synthetic workload's option, not with --trace`);
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
  const shifts = ['then-rate', 'then-input-len', 'then-output-len', 'shift-at'] as const;
  if (shifts.some((name) => values[name] !== undefined)) {
    if (tenants !== undefined) throw new ConfigError('--then-*, --shift-at: not with --tenants');
    const from = Math.round(synthetic.requests * num(values, 'shift-at', 0.5, { min: 0, max: 1 }));
    const then = {
      from,
      rate: num(values, 'then-rate', synthetic.rate, { min: 0, exclusive: true }),
      input: values['then-input-len'] === undefined ? synthetic.input : length(values, 'then-input-len', ''),
      output: values['then-output-len'] === undefined ? synthetic.output : length(values, 'then-output-len', ''),
    };
    return syntheticWorkload({ ...synthetic, then });
  }
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

function length(
  values: Values,
  name: 'input-len' | 'output-len' | 'then-input-len' | 'then-output-len',
  fallback: string,
): LengthDistribution {
  try {
    return parseLength(values[name] ?? fallback);
  } catch (err) {
    throw new ConfigError(`--${name}: ${(err as Error).message}`);
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
