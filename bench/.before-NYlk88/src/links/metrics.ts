/**
 * Link metrics: links by state and side, link/unlink call latency, and runtime batch sizes.
 */
import { Gauge, Histogram, METRIC_PREFIX, type Registry } from '../core/metrics.ts';
import type { LinkTable } from './table.ts';

export interface LinkMetrics {
  observeCall(op: 'link' | 'unlink', seconds: number): void;
  observeBatch(op: 'link' | 'unlink', size: number, seconds: number): void;
}

const NOOP: LinkMetrics = { observeCall: () => {}, observeBatch: () => {} };

/**
 * Registers the link metrics on `registry` (no-op metrics without one).
 * @example const metrics = createLinkMetrics(registry, table);
 */
export function createLinkMetrics(registry: Registry | undefined, table: LinkTable): LinkMetrics {
  if (registry === undefined) return NOOP;
  new Gauge({
    name: `${METRIC_PREFIX}links`,
    help: 'Links held by the link manager, by state and side',
    labelNames: ['state', 'side'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [key, n] of table.counts()) {
        const [state = '', side = ''] = key.split('\u0000');
        this.set({ state, side }, n);
      }
    },
  });
  const calls = new Histogram({
    name: `${METRIC_PREFIX}link_call_duration_seconds`,
    help: 'Duration of linkClusters/unlinkClusters calls, queueing and batching included',
    labelNames: ['op'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const batchSizes = new Histogram({
    name: `${METRIC_PREFIX}link_batch_size`,
    help: 'Clusters per runtime link/unlink call',
    labelNames: ['op'],
    buckets: [1, 2, 4, 8, 12, 16],
    registers: [registry],
  });
  const batchDurations = new Histogram({
    name: `${METRIC_PREFIX}link_batch_duration_seconds`,
    help: 'Duration of one runtime link/unlink call in the worker pool',
    labelNames: ['op'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return {
    observeCall: (op, seconds) => calls.observe({ op }, seconds),
    observeBatch: (op, size, seconds) => {
      batchSizes.observe({ op }, size);
      batchDurations.observe({ op }, seconds);
    },
  };
}
