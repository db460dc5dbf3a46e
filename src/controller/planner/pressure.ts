/**
 * The planner's signals, as one number per stage and group: its pressure, the share of what its
 * instances can take that they are asked for, so 1 is saturated. In load mode it is read from the
 * agents' status (what each instance runs and holds, against the thresholds); in SLA mode from the
 * request mix the Coordinators report, against what one instance of each role serves at the targets
 * (profile.ts). Pure: the planner feeds it what the controller observed.
 */
import type { MemberView } from '../controller-view.ts';
import type { LoadThresholds } from './settings.ts';
import type { StageCapacity } from './profile.ts';

export type Stage = 'prefill' | 'decode';

/** The serving instances of one group, by stage, each with its own pressure. */
export interface GroupLoad {
  readonly group: number;
  readonly prefill: readonly InstanceLoad[];
  readonly decode: readonly InstanceLoad[];
}

export interface InstanceLoad {
  readonly id: number;
  /** Load mode: its share of saturation; SLA mode: its in-flight legs (which one is moved first). */
  readonly pressure: number;
}

/**
 * The pressure of one instance in load mode: prefill by its legs in flight (queued prefills
 * included) against `prefillInFlight`; decode by its legs in flight against `decodeInFlight` when
 * set; both by the share of slots and of KV blocks in use against `usage`; the highest counts.
 * @example instancePressure('prefill', { totalSlots: 256, availSlots: 250, totalBlocks: 100, availBlocks: 90 }, thresholds) // 1.5
 */
export function instancePressure(stage: Stage, r: NonNullable<MemberView['resources']>, t: LoadThresholds): number {
  const inFlight = Math.max(0, r.totalSlots - r.availSlots);
  const slotShare = r.totalSlots === 0 ? 0 : inFlight / r.totalSlots;
  const blockShare = r.totalBlocks === 0 ? 0 : Math.max(0, r.totalBlocks - r.availBlocks) / r.totalBlocks;
  const usage = Math.max(slotShare, blockShare) / t.usage;
  const limit = stage === 'prefill' ? t.prefillInFlight : t.decodeInFlight;
  return Math.max(usage, limit === undefined ? 0 : inFlight / limit);
}

/**
 * The serving instances of every group, each with its load-mode pressure (instances without a
 * resource block count as idle); groups in order.
 * @example groupLoads(view.members, thresholds)[0].decode // [{ id: 200, pressure: 0.4 }]
 */
export function groupLoads(members: readonly MemberView[], t: LoadThresholds): GroupLoad[] {
  const groups = new Map<number, { prefill: InstanceLoad[]; decode: InstanceLoad[] }>();
  for (const m of members) {
    if (m.state !== 'serving' || (m.role !== 'prefill' && m.role !== 'decode')) continue;
    let g = groups.get(m.group);
    if (g === undefined) groups.set(m.group, (g = { prefill: [], decode: [] }));
    g[m.role].push({ id: m.id, pressure: m.resources === undefined ? 0 : instancePressure(m.role, m.resources, t) });
  }
  return [...groups].sort(([a], [b]) => a - b).map(([group, g]) => ({ group, prefill: g.prefill, decode: g.decode }));
}

/**
 * The mean pressure of a stage's instances.
 * @example meanPressure([{ id: 1, pressure: 1 }, { id: 2, pressure: 0 }]) // 0.5
 */
export function meanPressure(instances: readonly InstanceLoad[]): number {
  return instances.length === 0 ? 0 : instances.reduce((sum, i) => sum + i.pressure, 0) / instances.length;
}

/** What the Coordinators saw arrive over the window. */
export interface RequestMix {
  readonly requestsPerS: number;
  readonly inputTokensPerS: number;
  readonly outputTokensPerS: number;
}

/**
 * SLA mode: how many instances of each stage a group's share of the traffic needs at the targets
 * (`share`: the group's share of all serving instances; requests spread over groups by instances).
 * @example slaDemand({ requestsPerS: 10, inputTokensPerS: 20000, outputTokensPerS: 2000 }, capacity, 1) // { prefill: 2, decode: 0.5 }
 */
export function slaDemand(mix: RequestMix, capacity: StageCapacity, share: number): Record<Stage, number> {
  const per = (rate: number, cap: number): number => (cap <= 0 ? (rate > 0 ? Infinity : 0) : (rate * share) / cap);
  return { prefill: per(mix.inputTokensPerS, capacity.prefillTokensPerS), decode: per(mix.outputTokensPerS, capacity.decodeTokensPerS) };
}
