/**
 * Prometheus metrics of the refresh path: outcomes, time to validate and apply, and instances per
 * role (read from the registry at scrape time, so it can never drift from it).
 */
import { FastHistogram } from '../core/fast-metrics.ts';
import { Counter, Gauge, type Registry } from '../core/metrics.ts';
import type { InstanceRole } from './instance.ts';
import type { ClusterRegistry } from './registry.ts';

export type RefreshOutcome = 'ok' | 'invalid' | 'too_large';

export interface RefreshMetrics {
  /** Counts one refresh request by outcome. */
  refreshed(outcome: RefreshOutcome): void;
  /** Records the validate + apply time of an accepted refresh. */
  applied(seconds: number): void;
}

const OUTCOMES: readonly RefreshOutcome[] = ['ok', 'invalid', 'too_large'];
const ROLES: readonly InstanceRole[] = ['prefill', 'decode', 'undefined'];
/** From a 2-instance snapshot (tens of µs) to a 4096-instance one on a slow machine (tens of ms). */
const APPLY_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

/**
 * Registers `pdlink_refresh_total{outcome}`, `pdlink_refresh_apply_seconds` and `pdlink_instances{role}`.
 * @example const m = refreshMetrics(metrics, registry); m.refreshed('ok');
 */
export function refreshMetrics(metrics: Registry, registry: ClusterRegistry): RefreshMetrics {
  const registers = [metrics];
  // Counted in plain numbers and handed to prom-client when scraped: an increment through its label
  // machinery cost as much as the rest of a small refresh's bookkeeping.
  const pending: Record<RefreshOutcome, number> = { ok: 0, invalid: 0, too_large: 0 };
  const total = new Counter({
    name: 'pdlink_refresh_total',
    help: 'POST /v1/instances/refresh requests by outcome (ok, invalid, too_large)',
    labelNames: ['outcome'] as const,
    registers,
    collect() {
      for (const outcome of OUTCOMES) {
        if (pending[outcome] === 0) continue;
        this.inc({ outcome }, pending[outcome]);
        pending[outcome] = 0;
      }
    },
  });
  // Every outcome is exported from the start, so a rate() over "invalid" works before the first one.
  for (const outcome of OUTCOMES) total.inc({ outcome }, 0);
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
    refreshed: (outcome) => void pending[outcome]++,
    applied: (seconds) => apply.observe(seconds),
  };
}
