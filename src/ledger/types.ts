/**
 * The shapes of the ledger's programmatic API: options, arguments, and the plain data it returns.
 */
import type { ClusterView } from '../cluster/instance.ts';
import type { Registry } from '../core/metrics.ts';
import type { InstanceLoad } from './accounts.ts';
import type { LeaseClock } from '../core/lease-clock.ts';
import type { TransferPhase, TransferRecord, TransferState } from './records.ts';

/** P's own lease on prefilled blocks is 30 s in vLLM-style engines; ours matches it by default. */
export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_RECENT_CAPACITY = 256;

export interface LedgerOptions {
  /** Topology source: instances it adds are reservable, updates refresh their reported capacity. */
  cluster: ClusterView;
  /** Time source of leases (default: the system clock). */
  clock?: LeaseClock;
  /** Registry for the ledger's metrics (default: no metrics). */
  metrics?: Registry;
  /** Lease of a reservation that does not name one (default 30 000 ms). */
  defaultLeaseMs?: number;
  /** How many ended records `recent` keeps (default 256). */
  recentCapacity?: number;
}

export interface ReserveRequest {
  /** The record's key; the proxy makes one per request, so no client can collide with another's. */
  requestId: string;
  /** The id the client knows the request by (its `X-Request-Id`), kept for correlation only: never a key. */
  clientRequestId?: string;
  /** Prefill and decode instance ids. */
  p: number;
  d: number;
  /** Slots taken on each of P and D (default 1). */
  slots?: number;
  pBlocks: number;
  dBlocks: number;
  leaseMs?: number;
  /**
   * A phase the record begins at once, as a `begin` right after would (the proxy's records start
   * prefilling): one change for the listeners instead of two. Default: none, the record is `reserved`.
   */
  phase?: TransferPhase;
}

export interface CompleteReport {
  bytes?: number;
  /** Blocks moved (default: the record's dBlocks). */
  blocks?: number;
}

/** Running totals; `reserved*` are sums over instances (a record counts on both P and D). */
export interface LedgerTotals {
  readonly active: number;
  readonly reservedSlots: number;
  readonly reservedBlocks: number;
  readonly bytesMoved: number;
  readonly blocksMoved: number;
  readonly done: number;
  readonly failed: number;
  readonly expired: number;
  readonly released: number;
}

export interface LedgerSnapshot {
  /** Active records, oldest reservation first. */
  readonly active: TransferRecord[];
  /** Recently ended records, newest first. */
  readonly recent: TransferRecord[];
  readonly totals: LedgerTotals;
  /** Every known instance, by id. */
  readonly instances: (InstanceLoad & { readonly id: number })[];
}

/** A record changed state; `from` is null for a new reservation. */
export interface LedgerEvent {
  readonly record: TransferRecord;
  readonly from: TransferState | null;
  /** Set when the record's decode side moved (moveDecode): the D it left, whose capacity came back. */
  readonly movedFrom?: number;
}
