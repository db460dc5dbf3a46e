/**
 * Prometheus metrics. Each pdlink instance owns its own registry (never prom-client's global one),
 * so several instances can live in one process (a gateway mounting two, a test suite).
 */
import { Registry } from 'prom-client';

export { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Metric name prefix shared by every pdlink metric. */
export const METRIC_PREFIX = 'pdlink_';

/**
 * Creates an empty registry for one pdlink instance.
 * @example const registry = createRegistry(); new Counter({ name: 'pdlink_x_total', help: 'x', registers: [registry] });
 */
export function createRegistry(): Registry {
  return new Registry();
}
