/**
 * One decision of the planner for one group, pure: from the group's averaged stage pressures, its
 * counts, its movable instances and the time since its last move, either the move to make or why
 * none. Load mode moves an instance when one stage is saturated (pressure ≥ 1) and the other keeps
 * `margin` of headroom after giving it (its pressure × n/(n−1) ≤ 1 − margin). SLA mode moves one
 * instance toward the split that minimises the busier stage's pressure, when a stage is within
 * `margin` of its capacity at the targets and the move lowers the busier pressure by `margin` of it.
 * Either way the donor keeps its minimum, and the rule asks the same of the move back, so a load that
 * sits near a threshold does not send an instance back and forth; the window and the cool-down
 * (planner.ts) keep a load that swings faster than they are from doing so.
 */
import type { Stage } from './pressure.ts';

/** Why a group got the decision it got; the metric's `reason` label. */
export type DecisionCode =
  | 'move'
  | 'move_in_progress'
  | 'cooling_down'
  | 'warming_up'
  | 'no_serving'
  | 'balanced'
  | 'donor_busy'
  | 'at_minimum'
  | 'none_movable'
  | 'no_request_totals'
  | 'refused';

export const DECISION_CODES: readonly DecisionCode[] = [
  'move',
  'move_in_progress',
  'cooling_down',
  'warming_up',
  'no_serving',
  'balanced',
  'donor_busy',
  'at_minimum',
  'none_movable',
  'no_request_totals',
  'refused',
];

export interface StageState {
  /** Instances of the stage in the group (serving). */
  readonly count: number;
  /** Mean pressure over the window (load mode: per instance; SLA mode: demand / count). */
  readonly pressure: number;
  /** Ids the planner may move, least loaded first. */
  readonly movable: readonly number[];
  readonly min: number;
}

export interface GroupInput {
  readonly mode: 'load' | 'sla';
  readonly margin: number;
  readonly prefill: StageState;
  readonly decode: StageState;
}

export interface Decision {
  readonly group: number;
  readonly at: number;
  readonly code: DecisionCode;
  /** A sentence an operator reads: the signals, and the move or why none. */
  readonly reason: string;
  readonly pressure: Readonly<Record<Stage, number>> | undefined;
  readonly move: { readonly id: number; readonly from: Stage; readonly to: Stage } | undefined;
}

const other = (stage: Stage): Stage => (stage === 'prefill' ? 'decode' : 'prefill');
const f = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '∞');

/**
 * The decision for one group whose window is full.
 * @example decideGroup(0, now, { mode: 'load', margin: 0.2, prefill, decode })
 */
export function decideGroup(group: number, at: number, input: GroupInput): Decision {
  const pressure = { prefill: input.prefill.pressure, decode: input.decode.pressure };
  const signals = `prefill ${f(pressure.prefill)} on ${input.prefill.count}, decode ${f(pressure.decode)} on ${input.decode.count}`;
  const hold = (code: DecisionCode, why: string): Decision => ({
    group,
    at,
    code,
    reason: `${why} (${signals})`,
    pressure,
    move: undefined,
  });
  const propose = (from: Stage, why: string): Decision => {
    const donor = input[from];
    if (donor.count - 1 < donor.min) return hold('at_minimum', `${why}, but ${from} is at its minimum of ${donor.min} in the group`);
    const id = donor.movable[0];
    if (id === undefined)
      return hold('none_movable', `${why}, but no ${from} instance may be moved (pinned, or fixed in the topology file)`);
    return {
      group,
      at,
      code: 'move',
      reason: `${why}: moving instance ${id} ${from} → ${other(from)} (${signals})`,
      pressure,
      move: { id, from, to: other(from) },
    };
  };
  const after = (stage: Stage, delta: number): number => {
    const n = input[stage].count + delta;
    return n <= 0 ? Infinity : (pressure[stage] * input[stage].count) / n;
  };
  if (input.mode === 'load') {
    const busy: Stage = pressure.prefill >= pressure.decode ? 'prefill' : 'decode';
    if (pressure[busy] < 1) return hold('balanced', 'no stage saturated');
    const donor = other(busy);
    const left = after(donor, -1);
    if (left > 1 - input.margin)
      return hold(
        'donor_busy',
        `${busy} saturated, but ${donor} would be at ${f(left)} after giving an instance, above ${f(1 - input.margin)} (1 − margin)`,
      );
    return propose(donor, `${busy} saturated and ${donor} keeps headroom (${f(left)} after giving an instance)`);
  }
  const now = Math.max(pressure.prefill, pressure.decode);
  if (now < 1 - input.margin) return hold('balanced', `both stages below ${f(1 - input.margin)} of their capacity at the targets`);
  const options = (['prefill', 'decode'] as const).map((from) => ({ from, max: Math.max(after(from, -1), after(other(from), 1)) }));
  const best = options[0]!.max <= options[1]!.max ? options[0]! : options[1]!;
  if (best.max > now * (1 - input.margin))
    return hold(
      'balanced',
      `no move lowers the busier stage by the margin (best: ${best.from} → ${other(best.from)} gives ${f(best.max)})`,
    );
  return propose(best.from, `the split is off the targets' (busier stage ${f(now)}, ${f(best.max)} after the move)`);
}
