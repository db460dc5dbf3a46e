/**
 * The planner's Prometheus metrics: every decision by its reason, every move by its roles, who asked
 * and how it ended, how long moves take, whether one is under way, and each group's stage pressure
 * as the last decision read it (1 = saturated in load mode, at capacity in SLA mode).
 */
import { Counter, Gauge, Histogram, type Registry } from '../../core/metrics.ts';
import { DECISION_CODES, type Decision } from './decide.ts';
import type { MoveOutcome, MoveView } from './moves.ts';
import type { PlannerView } from './planner.ts';

export interface PlannerMetrics {
  decided(decision: Decision): void;
  moveEnded(move: MoveView, outcome: MoveOutcome, seconds: number): void;
}

/**
 * Registers the metrics; `view` and `moving` are read at scrape time.
 * @example const metrics = plannerMetrics(registry, () => planner.view(), () => controller.moves.current !== undefined);
 */
export function plannerMetrics(registry: Registry, view: () => PlannerView, moving: () => boolean): PlannerMetrics {
  const registers = [registry];
  const decisions = new Counter({
    name: 'pdlink_planner_decisions_total',
    help: "The planner's decisions per group, by reason (move, or why none: balanced, donor_busy, cooling_down, warming_up, ...).",
    labelNames: ['reason'],
    registers,
  });
  for (const reason of DECISION_CODES) decisions.inc({ reason }, 0);
  const moves = new Counter({
    name: 'pdlink_planner_moves_total',
    help: 'Moves between roles that ended, by old and new role, who asked (planner or operator) and outcome (done, timed_out, cancelled).',
    labelNames: ['from', 'to', 'by', 'outcome'],
    registers,
  });
  const duration = new Histogram({
    name: 'pdlink_planner_move_seconds',
    help: 'Time from the start of a move (its drain) to its end (ready in the new role), moves that ended done.',
    buckets: [1, 2, 5, 10, 20, 30, 60, 120, 300],
    registers,
  });
  new Gauge({
    name: 'pdlink_planner_move_in_progress',
    help: 'Whether a move between roles is under way (1) or not (0).',
    registers,
    collect() {
      this.set(moving() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'pdlink_planner_stage_pressure',
    help: "Each group's stage pressure as the planner's last decision read it: load mode 1 = saturated, SLA mode 1 = at capacity at the targets.",
    labelNames: ['group', 'stage'],
    registers,
    collect() {
      this.reset();
      for (const g of view().groups) {
        const p = g.decision?.pressure;
        if (p === undefined) continue;
        this.set({ group: String(g.group), stage: 'prefill' }, p.prefill);
        this.set({ group: String(g.group), stage: 'decode' }, p.decode);
      }
    },
  });
  return {
    decided: (decision) => decisions.inc({ reason: decision.code }),
    moveEnded(move, outcome, seconds) {
      moves.inc({ from: move.from, to: move.to, by: move.by, outcome });
      if (outcome === 'done') duration.observe(seconds);
    },
  };
}
