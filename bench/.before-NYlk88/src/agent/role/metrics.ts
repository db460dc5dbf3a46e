/**
 * Role API metrics: role posts and switches, desired vs linked links, retries of failed links,
 * and reconciliation latency (from a post's 200 to RoleReady).
 */
import { Counter, Gauge, Histogram, METRIC_PREFIX, type Registry } from '../../core/metrics.ts';
import type { Role } from '../../schema/role.ts';

export interface RoleMetrics {
  posted(role: Role): void;
  switched(from: Role | 'none', to: Role): void;
  retried(links: number): void;
  observeReady(seconds: number): void;
}

export interface RoleLinkCounts {
  readonly desired: number;
  readonly linked: number;
}

const NOOP: RoleMetrics = { posted: () => {}, switched: () => {}, retried: () => {}, observeReady: () => {} };

/**
 * Registers the role metrics on `registry` (no-op metrics without one); `counts` is read at scrape time.
 * @example const metrics = createRoleMetrics(registry, () => ({ desired: 4, linked: 3 }));
 */
export function createRoleMetrics(registry: Registry | undefined, counts: () => RoleLinkCounts): RoleMetrics {
  if (registry === undefined) return NOOP;
  const posts = new Counter({
    name: `${METRIC_PREFIX}role_posts_total`,
    help: 'Role posts accepted (200), by role',
    labelNames: ['role'],
    registers: [registry],
  });
  const switches = new Counter({
    name: `${METRIC_PREFIX}role_switches_total`,
    help: 'Role changes applied (from none on the first post), by previous and new role',
    labelNames: ['from', 'to'],
    registers: [registry],
  });
  new Gauge({
    name: `${METRIC_PREFIX}role_links`,
    help: 'Links of the current role: desired by the last post, and linked of those',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const now = counts();
      this.set({ state: 'desired' }, now.desired);
      this.set({ state: 'linked' }, now.linked);
    },
  });
  const retries = new Counter({
    name: `${METRIC_PREFIX}role_link_retries_total`,
    help: 'Link attempts made by the retry of failed desired links',
    registers: [registry],
  });
  const ready = new Histogram({
    name: `${METRIC_PREFIX}role_reconcile_duration_seconds`,
    help: 'Time from a role post being accepted to RoleReady (every desired link up)',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  return {
    posted: (role) => posts.inc({ role }),
    switched: (from, to) => switches.inc({ from, to }),
    retried: (links) => retries.inc(links),
    observeReady: (seconds) => ready.observe(seconds),
  };
}
