/**
 * The store's metrics, read at scrape time: `pdlink_store_connected` (1 while the store answers, 0
 * while it does not: only silence, never a refused write), `pdlink_store_no_space` (etcd's NOSPACE
 * alarm: writes fail until an operator frees space), `pdlink_store_errors_total{reason}` (failed
 * calls by reason) and `pdlink_store_db_size_bytes` (etcd's database, as the probe last saw it).
 */
import { Counter, Gauge, type Registry } from '../core/metrics.ts';
import { STORE_ERROR_REASONS } from './store-error.ts';
import type { Store } from './store.ts';

/**
 * Registers the store's metrics.
 * @example storeMetrics(registry, store);
 */
export function storeMetrics(registry: Registry, store: Store): void {
  const labels = { store: store.kind };
  new Gauge({
    name: 'pdlink_store_connected',
    help: 'Whether the shared store (etcd) answered its last call: 1 yes, 0 no (a refused write still counts as an answer)',
    labelNames: ['store'],
    registers: [registry],
    collect() {
      this.set(labels, store.connected() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'pdlink_store_no_space',
    help: 'Whether etcd is out of space (its NOSPACE alarm): 1 yes, 0 no; writes fail until it is compacted, defragmented and disarmed',
    labelNames: ['store'],
    registers: [registry],
    collect() {
      this.set(labels, store.health().noSpace ? 1 : 0);
    },
  });
  const counted = new Map<string, number>();
  new Counter({
    name: 'pdlink_store_errors_total',
    help: 'Failed store calls by reason: unreachable, no_space, too_large, refused',
    labelNames: ['store', 'reason'],
    registers: [registry],
    collect() {
      const errors = store.health().errors;
      for (const reason of STORE_ERROR_REASONS) {
        const delta = errors[reason] - (counted.get(reason) ?? 0);
        counted.set(reason, errors[reason]);
        this.inc({ ...labels, reason }, delta);
      }
    },
  });
  new Gauge({
    name: 'pdlink_store_db_size_bytes',
    help: "Size of etcd's database on the member last asked (0 for the in-memory store)",
    labelNames: ['store'],
    registers: [registry],
    collect() {
      this.set(labels, store.health().dbSizeBytes ?? 0);
    },
  });
}
