/**
 * The benchmark report as JSON: what was run against what, and per run its summary and every
 * request's record. The shape is versioned (`schema`, `version`) and checked by report-schema.ts;
 * tools reading it should check both fields. docs/bench.md documents the fields.
 */
import type { RequestRecord } from './client.ts';
import type { RoleTimeline } from './roles.ts';
import type { RunResult, StoppedBy } from './runner.ts';
import { summarize, type Slo, type Summary } from './stats.ts';
import type { Target } from './target.ts';
import { prefixReuse, type Workload } from './workload.ts';

export const REPORT_SCHEMA = 'pdlink-bench-report';
/**
 * Raised on any change a reader could notice: a field added, renamed, removed, or changing meaning.
 * 2: each request's `tenant`, and each run's `byTenant` summaries when the workload has tenants.
 * 3: each run's `roles` (the cluster's roles and moves during the run) with `--controller-url`.
 */
export const REPORT_VERSION = 3;

export interface RunReport {
  /** `open` for a replay, `closed-cN` for a closed loop of N clients. */
  readonly label: string;
  readonly mode: 'open' | 'closed';
  readonly concurrency: number | null;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly stoppedBy: StoppedBy;
  readonly summary: Summary;
  /** The summary of each tenant's requests, when the workload has tenants (`--tenants`). */
  readonly byTenant?: Record<string, Summary>;
  /** The cluster's roles while it ran (`--controller-url`): each instance's role and state changes, the moves that ended. */
  readonly roles?: RoleTimeline;
  readonly requests: RequestRecord[];
}

export interface BenchReport {
  readonly schema: typeof REPORT_SCHEMA;
  readonly version: typeof REPORT_VERSION;
  readonly createdAt: string;
  /** True when a time bound or a signal ended some run before its workload was done. */
  readonly partial: boolean;
  readonly target: { readonly baseUrl: string; readonly endpoint: string; readonly model: string };
  readonly workload: {
    readonly kind: Workload['kind'];
    readonly source: string;
    readonly blockTokens: number;
    readonly requests: number;
    /** Share of blocks extending a prefix seen before, over the requests the runs could send. */
    readonly prefixReuse: number;
  };
  /** The settings the run was started with (command-line names). */
  readonly settings: Record<string, string | number | boolean | null>;
  readonly slo: Slo;
  readonly runs: RunReport[];
}

export interface ReportInput {
  readonly target: Target;
  readonly workload: Workload;
  readonly maxRequests: number;
  readonly settings: Record<string, string | number | boolean | null>;
  readonly slo: Slo;
  readonly runs: readonly (RunResult & { readonly roles?: RoleTimeline })[];
}

/**
 * Builds the report of finished (or cut) runs.
 * @example writeFileSync('out.json', JSON.stringify(buildReport({ target, workload, ... }), null, 2));
 */
export function buildReport(input: ReportInput): BenchReport {
  const { target, workload } = input;
  return {
    schema: REPORT_SCHEMA,
    version: REPORT_VERSION,
    createdAt: new Date().toISOString(),
    partial: input.runs.some((r) => r.stoppedBy !== 'complete'),
    target: { baseUrl: target.baseUrl, endpoint: target.endpoint, model: target.model },
    workload: {
      kind: workload.kind,
      source: workload.source,
      blockTokens: workload.blockTokens,
      requests: Math.min(workload.items.length, input.maxRequests),
      prefixReuse: prefixReuse(workload.items.slice(0, input.maxRequests)),
    },
    settings: input.settings,
    slo: input.slo,
    runs: input.runs.map((r) => {
      const tenants = [...new Set(r.records.flatMap((record) => (record.tenant === null ? [] : [record.tenant])))].sort();
      return {
        label: r.mode === 'open' ? 'open' : `closed-c${r.concurrency}`,
        mode: r.mode,
        concurrency: r.concurrency,
        startedAt: r.startedAt,
        durationMs: r.durationMs,
        stoppedBy: r.stoppedBy,
        summary: summarize(r.records, r.durationMs, input.slo),
        ...(tenants.length === 0
          ? {}
          : {
              byTenant: Object.fromEntries(
                tenants.map((t) => [
                  t,
                  summarize(
                    r.records.filter((record) => record.tenant === t),
                    r.durationMs,
                    input.slo,
                  ),
                ]),
              ),
            }),
        ...(r.roles === undefined ? {} : { roles: r.roles }),
        requests: r.records,
      };
    }),
  };
}
