/**
 * Prometheus metrics of the refresh path: outcomes, time to validate and apply, and instances per
 * role (read from the registry at scrape time, so it can never drift from it).
 */
import { type CounterCell, FastCounter, FastHistogram } from '../core/fast-metrics.ts';
import { Gauge, type Registry } from '../core/metrics.ts';
import type { InstanceRole } from './instance.ts';
import type { ClusterRegistry } from './registry.ts';

export type RefreshOutcome = 'ok' | 'invalid' | 'too_large';
/**
 * How an accepted refresh's body was read: parsed and checked whole, recognised as the last
 * accepted text resent, or as that text with only loads changed (read by the loads template).
 */
export type RefreshRead = 'parsed' | 'resent' | 'loads';

export interface RefreshMetrics {
  /** Counts one refresh request by outcome. */
  refreshed(outcome: RefreshOutcome): void;
  /** Records the validate + apply time of an accepted refresh, and how its body was read. */
  applied(seconds: number, read: RefreshRead): void;
}

const OUTCOMES: readonly RefreshOutcome[] = ['ok', 'invalid', 'too_large'];
const READS: readonly RefreshRead[] = ['parsed', 'resent', 'loads'];
const ROLES: readonly InstanceRole[] = ['prefill', 'decode', 'undefined'];
/** From a 2-instance snapshot (tens of µs) to a 4096-instance one on a slow machine (tens of ms). */
const APPLY_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

/**
 * Registers `pdlink_refresh_total{outcome}`, `pdlink_refresh_read_total{read}`,
 * `pdlink_refresh_apply_seconds` and `pdlink_instances{role}`.
 * @example const m = refreshMetrics(metrics, registry); m.refreshed('ok');
 */
export function refreshMetrics(metrics: Registry, registry: ClusterRegistry): RefreshMetrics {
  const registers = [metrics];
  // Cells bound once per label value (fast-metrics.ts): an increment through prom-client's label
  // machinery cost as much as the rest of a small refresh's bookkeeping. Every series is shown from
  // the start, so a rate() over "invalid" works before the first one.
  const outcomes = cellsOf(
    new FastCounter({
      name: 'pdlink_refresh_total',
      help: 'POST /v1/instances/refresh requests by outcome (ok, invalid, too_large)',
      labelNames: ['outcome'],
      registers,
    }),
    OUTCOMES,
  );
  const reads = cellsOf(
    new FastCounter({
      name: 'pdlink_refresh_read_total',
      help: 'Accepted refreshes by how the body was read (parsed whole; resent: equal to the last accepted text; loads: that text with only free slots and blocks changed)',
      labelNames: ['read'],
      registers,
    }),
    READS,
  );
  // A plain cell: prom-client's observe (label object, hash, bucket search) was a tenth of a small
  // changed refresh's own work.
  const apply = new FastHistogram({
    name: 'pdlink_refresh_apply_seconds',
    help: 'Time to validate and apply one accepted refresh snapshot',
    buckets: APPLY_BUCKETS,
    registers,
  }).labels();
  new Gauge({
    name: 'pdlink_instances',
    help: 'Instances in the cluster registry by role (prefill, decode, undefined)',
    labelNames: ['role'] as const,
    registers,
    collect() {
      const counts = registry.counts();
      for (const role of ROLES) this.set({ role }, counts[role]);
    },
  });
  return {
    refreshed: (outcome) => outcomes[outcome].inc(),
    applied: (seconds, read) => {
      apply.observe(seconds);
      reads[read].inc();
    },
  };
}

/** One cell per label value of a one-label counter, each shown at 0 from the start. */
function cellsOf<V extends string>(counter: FastCounter, values: readonly V[]): Record<V, CounterCell> {
  const cells = {} as Record<V, CounterCell>;
  for (const value of values) {
    cells[value] = counter.labels(value);
    cells[value].inc(0);
  }
  return cells;
}
