/**
 * Percentiles and the summary of one run: latency percentiles over the requests that completed,
 * throughput, goodput under the SLOs, and errors by status.
 */
import type { RequestRecord } from './client.ts';

export interface Percentiles {
  readonly count: number;
  readonly mean: number | null;
  readonly p50: number | null;
  readonly p90: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

export interface Slo {
  /** A request meets the SLO when its TTFT is at most this (no bound when null). */
  readonly ttftMs: number | null;
  /** …and its TPOT is at most this (no bound when null; requests of one token have no TPOT). */
  readonly tpotMs: number | null;
}

export interface Summary {
  readonly requests: number;
  readonly completed: number;
  readonly failed: number;
  readonly cut: number;
  /** Failed requests by HTTP status (`"0"` when no response arrived). */
  readonly errorsByStatus: Record<string, number>;
  readonly ttftMs: Percentiles;
  readonly tpotMs: Percentiles;
  readonly itlMs: Percentiles;
  readonly e2eMs: Percentiles;
  /** How late requests were sent against their schedule (open loop only). */
  readonly driftMs: Percentiles;
  readonly throughput: { readonly requestsPerS: number; readonly inputTokensPerS: number; readonly outputTokensPerS: number };
  readonly goodput: { readonly requests: number; readonly requestsPerS: number; readonly share: number };
}

/**
 * Percentile with linear interpolation between closest ranks (numpy's default).
 * @example percentile([1, 2, 3, 4], 50) // 2.5
 */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

/**
 * The percentiles of a sample.
 * @example percentiles([10, 20]).p50 // 15
 */
export function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    count: sorted.length,
    mean: sorted.length === 0 ? null : sorted.reduce((a, b) => a + b, 0) / sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length === 0 ? null : sorted[sorted.length - 1]!,
  };
}

/**
 * Whether a completed request met the SLO.
 * @example meetsSlo(record, { ttftMs: 2000, tpotMs: 50 })
 */
export function meetsSlo(record: RequestRecord, slo: Slo): boolean {
  if (record.outcome !== 'ok') return false;
  if (slo.ttftMs !== null && (record.ttftMs === null || record.ttftMs > slo.ttftMs)) return false;
  if (slo.tpotMs !== null && record.tpotMs !== null && record.tpotMs > slo.tpotMs) return false;
  return true;
}

/**
 * Summarises the records of one run that lasted `durationMs`.
 * @example summarize(records, 60_000, { ttftMs: 2000, tpotMs: null })
 */
export function summarize(records: readonly RequestRecord[], durationMs: number, slo: Slo): Summary {
  const ok = records.filter((r) => r.outcome === 'ok');
  const failed = records.filter((r) => r.outcome === 'error');
  const errorsByStatus: Record<string, number> = {};
  for (const r of failed) errorsByStatus[String(r.status)] = (errorsByStatus[String(r.status)] ?? 0) + 1;
  const seconds = durationMs / 1000;
  const rate = (n: number): number => (seconds > 0 ? n / seconds : 0);
  const good = ok.filter((r) => meetsSlo(r, slo)).length;
  return {
    requests: records.length,
    completed: ok.length,
    failed: failed.length,
    cut: records.length - ok.length - failed.length,
    errorsByStatus,
    ttftMs: percentiles(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs]))),
    tpotMs: percentiles(ok.flatMap((r) => (r.tpotMs === null ? [] : [r.tpotMs]))),
    itlMs: percentiles(ok.flatMap((r) => r.itlMs)),
    e2eMs: percentiles(ok.map((r) => r.e2eMs)),
    driftMs: percentiles(records.flatMap((r) => (r.driftMs === null ? [] : [r.driftMs]))),
    throughput: {
      requestsPerS: rate(ok.length),
      inputTokensPerS: rate(ok.reduce((n, r) => n + r.inputTokens, 0)),
      outputTokensPerS: rate(ok.reduce((n, r) => n + r.outputTokens, 0)),
    },
    goodput: { requests: good, requestsPerS: rate(good), share: records.length === 0 ? 0 : good / records.length },
  };
}
