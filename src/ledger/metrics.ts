/**
 * The ledger's Prometheus metrics. Counters and the duration histogram move as records end;
 * the per-instance and in-flight gauges are computed when scraped, so the hot path of reserve and
 * release does no label hashing.
 */
import { FastCounter, FastHistogram, type CounterCell, type HistogramCell } from '../core/fast-metrics.ts';
import { Gauge, type Registry } from '../core/metrics.ts';
import type { InstanceAccount } from './accounts.ts';
import { ACTIVE_STATES, type ActiveState, type FinalState } from './records.ts';

/** What the scrape-time gauges read from the ledger. */
export interface LedgerMetricsSource {
  accounts(): Iterable<readonly [number, InstanceAccount]>;
  activeCounts(): Readonly<Record<ActiveState, number>>;
}

/** KV transfers last from about a millisecond (same host, few blocks) to tens of seconds (long prompts over RoCE). */
export const TRANSFER_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class LedgerMetrics {
  readonly #bytes: CounterCell;
  readonly #blocks: CounterCell;
  readonly #duration: HistogramCell;
  readonly #expirations: CounterCell;
  readonly #ended: Record<FinalState, CounterCell>;

  constructor(registry: Registry, source: LedgerMetricsSource) {
    const registers = [registry];
    // Moved as every record ends: bound once and moved directly (see fast-metrics.ts).
    this.#bytes = new FastCounter({
      name: 'pdlink_kv_bytes_moved_total',
      help: 'KV-cache bytes moved by completed transfers',
      registers,
    }).labels();
    this.#blocks = new FastCounter({
      name: 'pdlink_kv_blocks_moved_total',
      help: 'KV-cache blocks moved by completed transfers',
      registers,
    }).labels();
    this.#duration = new FastHistogram({
      name: 'pdlink_kv_transfer_duration_seconds',
      help: 'Time from the start of a KV transfer to its completion',
      buckets: TRANSFER_DURATION_BUCKETS,
      registers,
    }).labels();
    this.#expirations = new FastCounter({
      name: 'pdlink_ledger_expirations_total',
      help: 'Reservations released because their lease ran out',
      registers,
    }).labels();
    const ended = new FastCounter({
      name: 'pdlink_ledger_records_ended_total',
      help: 'Transfer records that left the active set, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    // Children resolved once; every outcome shows as 0 from the start.
    this.#ended = {
      done: ended.labels('done'),
      failed: ended.labels('failed'),
      expired: ended.labels('expired'),
      released: ended.labels('released'),
    };
    for (const cell of Object.values(this.#ended)) cell.inc(0);
    new Gauge({
      name: 'pdlink_kv_transfers_in_flight',
      help: 'Active transfer records, by state',
      labelNames: ['state'],
      registers,
      collect() {
        const counts = source.activeCounts();
        for (const state of ACTIVE_STATES) this.set({ state }, counts[state]);
      },
    });
    new Gauge({
      name: 'pdlink_ledger_reserved_blocks',
      help: 'KV blocks reserved by this process on each instance',
      labelNames: ['instance'],
      registers,
      collect() {
        this.reset();
        for (const [id, account] of source.accounts()) this.set({ instance: String(id) }, account.reservedBlocks);
      },
    });
    new Gauge({
      name: 'pdlink_ledger_reserved_slots',
      help: 'Slots reserved by this process on each instance',
      labelNames: ['instance'],
      registers,
      collect() {
        this.reset();
        for (const [id, account] of source.accounts()) this.set({ instance: String(id) }, account.reservedSlots);
      },
    });
  }

  /**
   * Records a finished transfer; `seconds` is null when the record never entered `transferring`.
   * @example metrics.moved(1 << 20, 16, 0.004);
   */
  moved(bytes: number, blocks: number, seconds: number | null): void {
    if (bytes > 0) this.#bytes.inc(bytes);
    if (blocks > 0) this.#blocks.inc(blocks);
    if (seconds !== null) this.#duration.observe(seconds);
  }

  /**
   * Counts a record leaving the active set.
   * @example metrics.ended('expired');
   */
  ended(outcome: FinalState): void {
    this.#ended[outcome].inc();
    if (outcome === 'expired') this.#expirations.inc();
  }
}
