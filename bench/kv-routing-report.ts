/**
 * The report of bench/kv-routing.bench.ts: per workload and configuration, medians over rounds of
 * goodput, TTFT and their ratios against cache_affinity of the same round, with the goals
 * judged; and load_balance against round_robin per round (the question of its collapse on the
 * synthetic trace). Kept apart so a finished run's rows can be rendered again:
 * `bun bench/kv-routing-report.ts bench/results/kv-routing.json`.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { writeResults } from './lib.ts';

export interface RoutingSummary {
  requests: number;
  completed: number;
  failed: number;
  errorsByStatus: Record<string, number>;
  ttftMs: { p50: number; p90: number; p99: number };
  tpotMs: { p50: number; p90: number; p99: number };
  goodput: { requestsPerS: number; share: number };
}

export interface RoutingRow {
  workload: string;
  config: string;
  round: number;
  summary: RoutingSummary;
  cacheHitShare: number;
  localShare: number;
  indexedBlocks: number;
  /** The busier P's share of the P legs (0.5 = even). */
  prefillSplit: number;
  /** The machine's 1-minute load average when the run started and when it ended. */
  load: [number, number];
}

export interface RoutingMeta {
  engine: Record<string, unknown>;
  slo: { ttftMs: number; tpotMs: number };
  requests: number;
  rounds: number;
  localPrefill: number;
  tenants: number;
  workloads: readonly string[];
  configs: readonly string[];
  scales: string;
  /** The command that makes the result again, when the run had settings of its own. */
  rerun?: string;
}

const PRECISE = ['precise_prefix', 'precise_prefix+decode_first'];

const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * Writes bench/results/<name>.{json,md} from a run's rows.
 * @example reportKvRouting('kv-routing', rows, meta);
 */
export function reportKvRouting(name: string, rows: readonly RoutingRow[], meta: RoutingMeta): void {
  const against = (r: RoutingRow, config: string, field: (s: RoutingSummary) => number): number => {
    const base = rows.find((b) => b.workload === r.workload && b.config === config && b.round === r.round);
    return base === undefined ? NaN : field(r.summary) / field(base.summary);
  };
  const table: string[][] = [];
  const verdicts: string[] = [];
  for (const workload of meta.workloads) {
    for (const config of meta.configs) {
      const mine = rows.filter((r) => r.workload === workload && r.config === config);
      if (mine.length === 0) continue;
      const g = median(mine.map((r) => against(r, 'cache_affinity', (s) => s.goodput.requestsPerS)));
      const t = median(mine.map((r) => against(r, 'cache_affinity', (s) => s.ttftMs.p90)));
      table.push([
        workload,
        config,
        median(mine.map((r) => r.summary.goodput.requestsPerS)).toFixed(2),
        `${g.toFixed(2)}×`,
        `${median(mine.map((r) => r.summary.goodput.share * 100)).toFixed(1)} %`,
        `${median(mine.map((r) => r.summary.ttftMs.p50)).toFixed(0)} / ${median(mine.map((r) => r.summary.ttftMs.p90)).toFixed(0)}`,
        `${t.toFixed(2)}×`,
        `${median(mine.map((r) => r.cacheHitShare * 100)).toFixed(0)} %`,
        `${median(mine.map((r) => r.localShare * 100)).toFixed(0)} %`,
        `${median(mine.map((r) => r.prefillSplit * 100)).toFixed(0)} %`,
        median(mine.map((r) => (r.load[0] + r.load[1]) / 2)).toFixed(1),
        String(mine.reduce((n, r) => n + r.summary.failed, 0)),
      ]);
      if (!PRECISE.includes(config)) continue;
      const goal = workload.startsWith('multi-tenant')
        ? `goal ≥ 1.30× and ≤ 0.50×: ${g >= 1.3 && t <= 0.5 ? 'met' : 'NOT MET'}`
        : `goal never below cache_affinity (within 1 %): ${g >= 0.99 ? 'met' : 'NOT MET'}`;
      verdicts.push(`${workload}, ${config}: goodput ${g.toFixed(2)}× cache_affinity's, TTFT p90 ${t.toFixed(2)}× (${goal}).`);
    }
    const lb = rows.filter((r) => r.workload === workload && r.config === 'load_balance');
    if (lb.length > 0 && rows.some((r) => r.workload === workload && r.config === 'round_robin')) {
      const perRound = lb.map((r) => against(r, 'round_robin', (s) => s.goodput.requestsPerS));
      verdicts.push(
        `${workload}, load_balance against round_robin, goodput per round: ${perRound.map((x) => `${x.toFixed(2)}×`).join(', ')} (busier P's share of P legs ${lb.map((r) => `${(r.prefillSplit * 100).toFixed(0)} %`).join(', ')}).`,
      );
    }
  }
  const loads = rows.map((r) => (r.load[0] + r.load[1]) / 2);
  const summary = [
    `2 P + 2 D simulated, KV events on, one tokenizer for engines and Coordinator; ${meta.requests} requests per run (${meta.scales}); SLO TTFT ≤ ${meta.slo.ttftMs} ms, TPOT ≤ ${meta.slo.tpotMs} ms; ${meta.rounds} alternating rounds; "+local" = max_local_prefill_length ${meta.localPrefill}. Ratios against cache_affinity of the same round, medians over rounds. The 2-core machine was shared with other runs: load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} over the runs (median ${median(loads).toFixed(1)}), given per configuration in the table; a run on a saturated moment loses goodput whatever its policy.`,
    ...verdicts,
  ].join('\n\n');
  console.log(summary);
  const headers = [
    'workload',
    'config',
    'goodput req/s',
    'goodput vs cache_affinity',
    'goodput share',
    'TTFT p50 / p90 ms',
    'TTFT p90 vs cache_affinity',
    'prefix-cache hits',
    'local prefills',
    "busier P's share of P legs",
    'load average',
    'failed',
  ];
  writeResults(name, {
    json: { ...meta, rows },
    markdownTable: [
      `| ${headers.join(' | ')} |`,
      `| ${headers.map(() => '---').join(' | ')} |`,
      ...table.map((r) => `| ${r.join(' | ')} |`),
    ].join('\n'),
    summary,
  });
}

if (import.meta.main) {
  const saved = JSON.parse(readFileSync(process.argv[2] ?? 'bench/results/kv-routing.json', 'utf8')) as Partial<RoutingMeta> & {
    rows: RoutingRow[];
  };
  const rows = saved.rows;
  const file = process.argv[2] ?? 'bench/results/kv-routing.json';
  reportKvRouting(basename(file, '.json'), rows, {
    engine: saved.engine ?? {},
    slo: saved.slo ?? { ttftMs: 2000, tpotMs: 25 },
    requests: saved.requests ?? 0,
    rounds: saved.rounds ?? 0,
    localPrefill: saved.localPrefill ?? 0,
    tenants: saved.tenants ?? 0,
    workloads: saved.workloads ?? [...new Set(rows.map((r) => r.workload))],
    configs: saved.configs ?? [...new Set(rows.map((r) => r.config))],
    scales:
      saved.scales ??
      'synthetic and conversation traces: time × 0.06, lengths × 0.02; multi-tenant: 12 tenants, time × 0.7, lengths × 0.06',
    ...(saved.rerun === undefined ? {} : { rerun: saved.rerun }),
  });
}
