/**
 * The profile of one prefill and one decode instance that the controller's SLA planner reads
 * (schema/pd-profile.ts), measured against a deployment of one P and one D behind a Coordinator: a
 * prefill sweep (long prompts, one output token, open loop at each offered rate: the TTFT the prompt
 * rate costs) and a decode sweep (short prompts, long answers, closed loop at each concurrency: the
 * TPOT and output throughput each batch gives). Every point is an ordinary run of the harness.
 */
import type { PdProfile, PrefillPoint, DecodePoint } from '../schema/pd-profile.ts';
import { PROFILE_SCHEMA, PROFILE_VERSION } from '../schema/pd-profile.ts';
import type { Progress } from './progress.ts';
import { closedLoop, openLoop } from './runner.ts';
import { summarize } from './stats.ts';
import { syntheticWorkload } from './synthetic.ts';
import type { Target } from './target.ts';

export interface ProfilePlan {
  readonly target: Target;
  /** Prefill sweep: prompt tokens of each request, and the offered rates (requests per second). */
  readonly prefillInputTokens: number;
  readonly rates: readonly number[];
  /** Decode sweep: prompt and output tokens of each request, and the concurrency levels. */
  readonly decodeInputTokens: number;
  readonly decodeOutputTokens: number;
  readonly concurrency: readonly number[];
  /** Requests per point, and the time bound of one point. */
  readonly requestsPerPoint: number;
  readonly pointDurationMs: number;
  readonly seed: number;
}

/**
 * Runs both sweeps and returns the profile (what was measured before a stop, when stopped).
 * @example writeFileSync('profile.json', JSON.stringify(await measureProfile(plan, stop, progress), null, 2));
 */
export async function measureProfile(plan: ProfilePlan, stop: AbortSignal, progress: Progress): Promise<PdProfile> {
  const stamp = Date.now().toString(36);
  const workload = (rate: number, input: number, output: number) =>
    syntheticWorkload({
      requests: plan.requestsPerPoint,
      rate,
      input: { kind: 'fixed', value: input },
      output: { kind: 'fixed', value: output },
      // No shared prefix: the profile is of computing prompts, not of finding them cached.
      prefixShare: 0,
      prefixGroups: 1,
      blockTokens: 512,
      seed: plan.seed,
    });
  const settings = (label: string, rate: number, input: number, output: number) => ({
    target: plan.target,
    workload: workload(rate, input, output),
    maxRequests: plan.requestsPerPoint,
    durationMs: plan.pointDurationMs,
    stop,
    idPrefix: `profile-${stamp}-${label}`,
    onRecord: (record: Parameters<Progress['record']>[0]) => progress.record(record),
  });
  const slo = { ttftMs: null, tpotMs: null };
  const prefill: PrefillPoint[] = [];
  for (const rate of plan.rates) {
    if (stop.aborted) break;
    progress.start(`prefill ${rate}/s`, plan.requestsPerPoint);
    try {
      const run = await openLoop(settings(`p${rate}`, rate, plan.prefillInputTokens, 1));
      const s = summarize(run.records, run.durationMs, slo);
      prefill.push({
        requestsPerS: rate,
        promptTokensPerS: rate * plan.prefillInputTokens,
        ttftP50Ms: s.ttftMs.p50,
        ttftP90Ms: s.ttftMs.p90,
        completed: s.completed,
        failed: s.failed + s.cut,
      });
    } finally {
      progress.stop();
    }
  }
  const decode: DecodePoint[] = [];
  for (const level of plan.concurrency) {
    if (stop.aborted) break;
    progress.start(`decode c${level}`, plan.requestsPerPoint);
    try {
      const run = await closedLoop(settings(`d${level}`, 1, plan.decodeInputTokens, plan.decodeOutputTokens), level);
      const s = summarize(run.records, run.durationMs, slo);
      decode.push({
        concurrency: level,
        outputTokensPerS: s.throughput.outputTokensPerS,
        tpotP50Ms: s.tpotMs.p50,
        tpotP90Ms: s.tpotMs.p90,
        completed: s.completed,
        failed: s.failed + s.cut,
      });
    } finally {
      progress.stop();
    }
  }
  return {
    schema: PROFILE_SCHEMA,
    version: PROFILE_VERSION,
    createdAt: new Date().toISOString(),
    target: { baseUrl: plan.target.baseUrl, model: plan.target.model },
    prefill: { inputTokens: plan.prefillInputTokens, points: prefill },
    decode: { inputTokens: plan.decodeInputTokens, outputTokens: plan.decodeOutputTokens, points: decode },
  };
}
