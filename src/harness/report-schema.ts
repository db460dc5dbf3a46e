/**
 * The report's JSON schema as code (strict: an unknown or missing field fails), so a change to
 * the report's shape fails a test until the version and docs/bench.md move with it.
 */
import * as v from 'valibot';
import { REPORT_SCHEMA, REPORT_VERSION } from './report.ts';

const Num = v.number();
const NullableNum = v.nullable(v.number());

const Percentiles = v.strictObject({
  count: Num,
  mean: NullableNum,
  p50: NullableNum,
  p90: NullableNum,
  p99: NullableNum,
  max: NullableNum,
});

const Slo = v.strictObject({ ttftMs: NullableNum, tpotMs: NullableNum });

const Summary = v.strictObject({
  requests: Num,
  completed: Num,
  failed: Num,
  cut: Num,
  errorsByStatus: v.record(v.string(), Num),
  ttftMs: Percentiles,
  tpotMs: Percentiles,
  itlMs: Percentiles,
  e2eMs: Percentiles,
  driftMs: Percentiles,
  throughput: v.strictObject({ requestsPerS: Num, inputTokensPerS: Num, outputTokensPerS: Num }),
  goodput: v.strictObject({ requests: Num, requestsPerS: Num, share: Num }),
});

const RequestRecord = v.strictObject({
  index: Num,
  requestId: v.string(),
  scheduledMs: NullableNum,
  sentMs: Num,
  driftMs: NullableNum,
  inputTokens: Num,
  maxTokens: Num,
  outputTokens: Num,
  status: Num,
  outcome: v.picklist(['ok', 'error', 'cut']),
  error: v.nullable(v.string()),
  ttftMs: NullableNum,
  tpotMs: NullableNum,
  e2eMs: Num,
  itlMs: v.array(Num),
  prefill: v.nullable(v.string()),
  decode: v.nullable(v.string()),
  tenant: v.nullable(v.string()),
});

const StoppedBy = v.picklist(['complete', 'time_bound', 'signal']);

const Roles = v.strictObject({
  controller: v.string(),
  polls: Num,
  failedPolls: Num,
  changes: v.array(v.strictObject({ atMs: Num, id: Num, role: v.string(), state: v.string() })),
  moves: v.array(
    v.strictObject({
      id: Num,
      from: v.string(),
      to: v.string(),
      by: v.string(),
      outcome: v.string(),
      startedMs: Num,
      endedMs: Num,
    }),
  ),
});

const Run = v.strictObject({
  label: v.string(),
  mode: v.picklist(['open', 'closed']),
  concurrency: NullableNum,
  startedAt: v.string(),
  durationMs: Num,
  stoppedBy: StoppedBy,
  summary: Summary,
  byTenant: v.optional(v.record(v.string(), Summary)),
  roles: v.optional(Roles),
  requests: v.array(RequestRecord),
});

/** The whole report, version 3. */
export const BenchReportSchema = v.strictObject({
  schema: v.literal(REPORT_SCHEMA),
  version: v.literal(REPORT_VERSION),
  createdAt: v.string(),
  partial: v.boolean(),
  target: v.strictObject({ baseUrl: v.string(), endpoint: v.string(), model: v.string() }),
  workload: v.strictObject({
    kind: v.picklist(['trace', 'synthetic']),
    source: v.string(),
    blockTokens: Num,
    requests: Num,
    prefixReuse: Num,
  }),
  settings: v.record(v.string(), v.nullable(v.union([v.string(), v.number(), v.boolean()]))),
  slo: Slo,
  runs: v.array(Run),
});
