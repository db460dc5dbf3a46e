/**
 * Prometheus metrics. Each pdlink instance owns its own registry (never prom-client's global one),
 * so several instances can live in one process (a gateway mounting two, a test suite). The parts
 * pdlink uses are loaded module by module: prom-client's index also loads its Pushgateway, which
 * pulls the runtime's `http`, `https` and `zlib` modules into every process (megabytes of resident
 * code) although pdlink never pushes, and its cluster aggregator.
 */
import Registry from 'prom-client/lib/registry.js';

export { default as Counter } from 'prom-client/lib/counter.js';
export { default as Gauge } from 'prom-client/lib/gauge.js';
export { default as Histogram } from 'prom-client/lib/histogram.js';
export { Registry };

/** Metric name prefix shared by every pdlink metric. */
export const METRIC_PREFIX = 'pdlink_';

/**
 * Creates an empty registry for one pdlink instance.
 * @example const registry = createRegistry(); new Counter({ name: 'pdlink_x_total', help: 'x', registers: [registry] });
 */
export function createRegistry(): Registry {
  return new Registry();
}
