/**
 * The planner's settings as the controller holds them (milliseconds, camelCase), their defaults, and
 * their resolution from the topology file's `planner` section. Defaults are chosen so that a move
 * (a drain, a role switch, the links of the new role) is rare next to the time it costs: a decision
 * every 10 s on a minute of signals, two minutes between moves in a group, one of each role kept.
 */
import type { PdProfile } from '../../schema/pd-profile.ts';
import type { PlannerSection } from '../../schema/planner-config.ts';
import { capacityAt, type StageCapacity } from './profile.ts';

export type PlannerMode = 'off' | 'load' | 'sla';

/** Load mode: where an instance counts as saturated (pressure 1). */
export interface LoadThresholds {
  /** Prefill legs in flight (queued or running) on one prefill instance. */
  readonly prefillInFlight: number;
  /** Decode legs in flight on one decode instance; undefined: only `usage` counts. */
  readonly decodeInFlight: number | undefined;
  /** Share of an instance's slots or KV blocks in use. */
  readonly usage: number;
}

/** SLA mode: the targets and what one instance of each role serves while they hold. */
export interface SlaTargets {
  readonly ttftMs: number;
  readonly tpotMs: number;
  /** The profile file, as the topology file names it. */
  readonly profilePath: string;
  readonly capacity: StageCapacity;
}

export interface PlannerSettings {
  readonly mode: PlannerMode;
  /** A decision every this long (and a sample of the signals every min(1 s, this)). */
  readonly intervalMs: number;
  /** Decisions read the mean of the signals over this long since the group last changed. */
  readonly windowMs: number;
  /** No move in a group this long after its last move ended. */
  readonly cooldownMs: number;
  /** Load: the stage giving an instance keeps this share of headroom; SLA: a move must gain this share. */
  readonly margin: number;
  readonly minPrefillPerGroup: number;
  readonly minDecodePerGroup: number;
  /** A move not done by then is given up (the instance keeps the role it was given). */
  readonly moveTimeoutMs: number;
  readonly load: LoadThresholds;
  readonly sla: SlaTargets | undefined;
}

export const PLANNER_DEFAULTS: PlannerSettings = {
  mode: 'off',
  intervalMs: 10_000,
  windowMs: 60_000,
  cooldownMs: 120_000,
  margin: 0.2,
  minPrefillPerGroup: 1,
  minDecodePerGroup: 1,
  moveTimeoutMs: 300_000,
  load: { prefillInFlight: 4, decodeInFlight: undefined, usage: 0.9 },
  sla: undefined,
};

/**
 * The settings of a topology file's `planner` section (`profile`: the file its `sla.profile` names, read).
 * @example plannerSettings({ mode: 'load', cooldown_seconds: 60 }, undefined).cooldownMs // 60000
 */
export function plannerSettings(section: PlannerSection | undefined, profile: PdProfile | undefined): PlannerSettings {
  if (section === undefined) return PLANNER_DEFAULTS;
  const d = PLANNER_DEFAULTS;
  const ms = (s: number | undefined, fallback: number): number => (s === undefined ? fallback : Math.round(s * 1000));
  const load = section.load ?? {};
  const sla = section.sla;
  return {
    mode: section.mode ?? d.mode,
    intervalMs: ms(section.interval_seconds, d.intervalMs),
    windowMs: ms(section.window_seconds, d.windowMs),
    cooldownMs: ms(section.cooldown_seconds, d.cooldownMs),
    margin: section.margin ?? d.margin,
    minPrefillPerGroup: section.min_prefill_per_group ?? d.minPrefillPerGroup,
    minDecodePerGroup: section.min_decode_per_group ?? d.minDecodePerGroup,
    moveTimeoutMs: ms(section.move_timeout_seconds, d.moveTimeoutMs),
    load: {
      prefillInFlight: load.prefill_in_flight ?? d.load.prefillInFlight,
      decodeInFlight: load.decode_in_flight ?? d.load.decodeInFlight,
      usage: load.usage ?? d.load.usage,
    },
    sla:
      sla === undefined || profile === undefined
        ? undefined
        : { ttftMs: sla.ttft_ms, tpotMs: sla.tpot_ms, profilePath: sla.profile, capacity: capacityAt(profile, sla.ttft_ms, sla.tpot_ms) },
  };
}

/**
 * The settings in one line, for the log at start and on a change.
 * @example settingsLine(settings) // 'planner load: a decision every 10 s on 60 s of signals, ...'
 */
export function settingsLine(s: PlannerSettings): string {
  if (s.mode === 'off') return 'planner off (topology file: planner.mode)';
  const sec = (ms: number): string => `${ms / 1000} s`;
  const base =
    `planner ${s.mode}: a decision every ${sec(s.intervalMs)} on ${sec(s.windowMs)} of signals, ${sec(s.cooldownMs)} between moves ` +
    `in a group, margin ${s.margin}, at least ${s.minPrefillPerGroup} prefill and ${s.minDecodePerGroup} decode per group`;
  if (s.mode === 'load') {
    const l = s.load;
    const decode = l.decodeInFlight === undefined ? '' : `, ${l.decodeInFlight} decodes in flight per decode instance`;
    return `${base}; saturated at ${l.prefillInFlight} prefills in flight per prefill instance${decode}, or ${l.usage} of slots or KV blocks in use`;
  }
  const c = s.sla?.capacity;
  return c === undefined
    ? base
    : `${base}; TTFT ≤ ${s.sla!.ttftMs} ms and TPOT ≤ ${s.sla!.tpotMs} ms: one prefill instance serves ${Math.round(c.prefillTokensPerS)} prompt tokens/s, one decode instance ${Math.round(c.decodeTokensPerS)} output tokens/s (${s.sla!.profilePath})`;
}
