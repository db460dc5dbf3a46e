/**
 * `planner` of the controller's topology file: whether the controller moves instances between
 * prefill and decode as the load changes (`mode`), how often it looks and how long it averages, how
 * far apart moves are, how many of each role a group keeps, and the thresholds of each mode: the
 * load mode's saturation points, the SLA mode's targets and the profile (a file `pdlink bench
 * --profile` writes) they are read against. Every key is optional; the planner is off by default.
 */
import * as v from 'valibot';

export const PLANNER_MODES = ['off', 'load', 'sla'] as const;

const seconds = (min: number, max: number) =>
  v.pipe(v.number('must be a number'), v.minValue(min, `must be in [${min}, ${max}]`), v.maxValue(max, `must be in [${min}, ${max}]`));
const count = (min: number, max: number) =>
  v.pipe(
    v.number('must be a number'),
    v.integer('must be an integer'),
    v.minValue(min, `must be in [${min}, ${max}]`),
    v.maxValue(max, `must be in [${min}, ${max}]`),
  );
const positive = (max: number) =>
  v.pipe(v.number('must be a number'), v.gtValue(0, `must be > 0 and <= ${max}`), v.maxValue(max, `must be > 0 and <= ${max}`));

export const PlannerSection = v.pipe(
  v.strictObject({
    /** off (default), load (occupancy against thresholds) or sla (request mix against a profile at targets). */
    mode: v.optional(v.picklist(PLANNER_MODES, 'must be "off", "load" or "sla"')),
    interval_seconds: v.optional(seconds(0.1, 3600)),
    window_seconds: v.optional(seconds(0.1, 86_400)),
    cooldown_seconds: v.optional(seconds(0, 86_400)),
    margin: v.optional(v.pipe(v.number('must be a number'), v.minValue(0, 'must be in [0, 0.9]'), v.maxValue(0.9, 'must be in [0, 0.9]'))),
    min_prefill_per_group: v.optional(count(1, 16)),
    min_decode_per_group: v.optional(count(1, 16)),
    move_timeout_seconds: v.optional(seconds(1, 86_400)),
    load: v.optional(
      v.strictObject({
        prefill_in_flight: v.optional(positive(1_000_000)),
        decode_in_flight: v.optional(positive(1_000_000)),
        usage: v.optional(v.pipe(v.number('must be a number'), v.gtValue(0, 'must be in (0, 1]'), v.maxValue(1, 'must be in (0, 1]'))),
      }),
    ),
    sla: v.optional(
      v.strictObject({
        ttft_ms: positive(3_600_000),
        tpot_ms: positive(3_600_000),
        /** Path of the profile (relative to the topology file). */
        profile: v.pipe(v.string('must be a path'), v.minLength(1, 'must not be empty')),
      }),
    ),
  }),
  v.forward(
    v.check((p) => p.mode !== 'sla' || p.sla !== undefined, 'is required when mode is "sla" (ttft_ms, tpot_ms and profile)'),
    ['sla'],
  ),
);
export type PlannerSection = v.InferOutput<typeof PlannerSection>;
