/**
 * `pdlink_store_connected`: 1 while the store answers, 0 while it does not (a Coordinator keeps
 * proxying with its last snapshot meanwhile, a controller leader steps down after its lease).
 */
import { Gauge, type Registry } from '../core/metrics.ts';
import type { Store } from './store.ts';

/**
 * Registers the gauge, read at scrape time.
 * @example storeMetrics(registry, store);
 */
export function storeMetrics(registry: Registry, store: Store): void {
  new Gauge({
    name: 'pdlink_store_connected',
    help: 'Whether the shared store (etcd) answered its last call: 1 yes, 0 no',
    labelNames: ['store'],
    registers: [registry],
    collect() {
      this.set({ store: store.kind }, store.connected() ? 1 : 0);
    },
  });
}
