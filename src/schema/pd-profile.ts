/**
 * The profile of one prefill and one decode instance that `pdlink bench --profile` measures and the
 * controller's SLA planner reads: for prefill, the TTFT at each offered rate of long prompts; for
 * decode, the TPOT and output throughput at each number of concurrent answers. From it the planner
 * reads how much one instance of each role serves while a TTFT or TPOT target still holds. The
 * shape is versioned like the bench report (`schema`, `version`); camelCase, as the bench writes it.
 */
import * as v from 'valibot';

export const PROFILE_SCHEMA = 'pdlink-pd-profile';
export const PROFILE_VERSION = 1;

const Num = v.number('must be a number');
const NonNegative = v.pipe(Num, v.minValue(0, 'must be >= 0'));
const Latency = v.nullable(NonNegative);

/** One offered rate of the prefill sweep. */
export const PrefillPoint = v.object({
  requestsPerS: NonNegative,
  /** Prompt tokens per second offered (requestsPerS × the prompt length). */
  promptTokensPerS: NonNegative,
  ttftP50Ms: Latency,
  ttftP90Ms: Latency,
  completed: NonNegative,
  failed: NonNegative,
});
export type PrefillPoint = v.InferOutput<typeof PrefillPoint>;

/** One concurrency level of the decode sweep. */
export const DecodePoint = v.object({
  concurrency: NonNegative,
  /** Output tokens per second served. */
  outputTokensPerS: NonNegative,
  tpotP50Ms: Latency,
  tpotP90Ms: Latency,
  completed: NonNegative,
  failed: NonNegative,
});
export type DecodePoint = v.InferOutput<typeof DecodePoint>;

export const PdProfile = v.object({
  schema: v.literal(PROFILE_SCHEMA, `must be "${PROFILE_SCHEMA}"`),
  version: v.literal(PROFILE_VERSION, `must be ${PROFILE_VERSION} (a profile of another version: measure it again)`),
  createdAt: v.string('must be a string'),
  target: v.object({ baseUrl: v.string('must be a string'), model: v.string('must be a string') }),
  prefill: v.object({
    inputTokens: NonNegative,
    points: v.pipe(v.array(PrefillPoint, 'must be an array of points'), v.minLength(1, 'must hold at least one point')),
  }),
  decode: v.object({
    inputTokens: NonNegative,
    outputTokens: NonNegative,
    points: v.pipe(v.array(DecodePoint, 'must be an array of points'), v.minLength(1, 'must hold at least one point')),
  }),
});
export type PdProfile = v.InferOutput<typeof PdProfile>;
