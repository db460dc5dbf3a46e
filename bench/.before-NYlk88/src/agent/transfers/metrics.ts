/**
 * Metrics of the agent's block transfers through the device runtime: bytes and blocks moved,
 * transfers by outcome, their duration, and how many run now. Named `runtime_transfer*` so they
 * never clash with the Coordinator ledger's `kv_*` accounting when one registry holds both.
 */
import { Counter, Gauge, Histogram, METRIC_PREFIX, type Registry } from '../../core/metrics.ts';

export type TransferOp = 'pull' | 'push';
/** `success`, `failure` (any code but LLM_SUCCESS) or `aborted` (the caller's signal). */
export type TransferOutcome = 'success' | 'failure' | 'aborted';

export interface TransferMetrics {
  /** One transfer ended; `bytes`/`blocks` count what moved, a partial transfer included. */
  observe(op: TransferOp, outcome: TransferOutcome, retName: string, bytes: number, blocks: number, seconds: number): void;
}

const NOOP: TransferMetrics = { observe: () => {} };

/**
 * Registers the transfer metrics on `registry` (no-op metrics without one); `running` is read at scrape time.
 * @example const metrics = createTransferMetrics(registry, () => transfers.active());
 */
export function createTransferMetrics(
  registry: Registry | undefined,
  running: () => readonly { readonly op: TransferOp }[],
): TransferMetrics {
  if (registry === undefined) return NOOP;
  const registers = [registry];
  const bytes = new Counter({
    name: `${METRIC_PREFIX}runtime_transfer_bytes_total`,
    help: 'KV-cache bytes moved by pulls and pushes through the device runtime',
    labelNames: ['op'],
    registers,
  });
  const blocks = new Counter({
    name: `${METRIC_PREFIX}runtime_transfer_blocks_total`,
    help: 'KV-cache blocks moved by pulls and pushes through the device runtime',
    labelNames: ['op'],
    registers,
  });
  const ended = new Counter({
    name: `${METRIC_PREFIX}runtime_transfers_total`,
    help: 'Pulls and pushes ended, by status code (or "aborted")',
    labelNames: ['op', 'code'],
    registers,
  });
  const duration = new Histogram({
    name: `${METRIC_PREFIX}runtime_transfer_duration_seconds`,
    help: 'Duration of one pull or push, queueing in the worker pool included',
    labelNames: ['op', 'outcome'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  new Gauge({
    name: `${METRIC_PREFIX}runtime_transfers_running`,
    help: 'Pulls and pushes in progress',
    labelNames: ['op'],
    registers,
    collect() {
      const counts = { pull: 0, push: 0 };
      for (const t of running()) counts[t.op]++;
      this.set({ op: 'pull' }, counts.pull);
      this.set({ op: 'push' }, counts.push);
    },
  });
  return {
    observe(op, outcome, retName, movedBytes, movedBlocks, seconds) {
      bytes.inc({ op }, movedBytes);
      blocks.inc({ op }, movedBlocks);
      ended.inc({ op, code: outcome === 'aborted' ? 'aborted' : retName });
      duration.observe({ op, outcome }, seconds);
    },
  };
}
