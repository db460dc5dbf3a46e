/**
 * The KV ledger: the single source of truth for the slots and KV blocks this process has reserved
 * on each instance, and for the transfer record of every request holding them.
 *
 * Capacity is what an instance last reported free minus what is reserved here; a reservation takes
 * both P and D or neither. Every record holds a lease: a record nobody completes, fails or releases
 * is expired at its deadline, so reserved capacity always returns to zero. Expiry is exact: any call
 * first expires what is due, and one timer (for the earliest deadline only) covers idle periods.
 */
import type { RegistryDiff } from '../cluster/instance.ts';
import { errors } from '../core/errors.ts';
import type { InstanceLoad } from './accounts.ts';
import { codeArg, countArg, leaseArg, phaseArg, reasonArg, requestIdArg, reserveArgs } from './arguments.ts';
import { systemClock, type LeaseClock } from '../core/lease-clock.ts';
import { CapacityBook } from './capacity.ts';
import { LeaseSchedule } from './lease-schedule.ts';
import { LedgerMetrics } from './metrics.ts';
import { RecentRecords } from './recent.ts';
import {
  canBegin,
  INSTANCE_REMOVED,
  LEASE_EXPIRED,
  LiveRecord,
  type ActiveState,
  type FinalState,
  type ReleaseReason,
  type TransferPhase,
  type TransferRecord,
  type TransferState,
} from './records.ts';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_RECENT_CAPACITY,
  type CompleteReport,
  type LedgerEvent,
  type LedgerOptions,
  type LedgerSnapshot,
  type LedgerTotals,
  type ReserveRequest,
} from './types.ts';

export class KvLedger {
  readonly #clock: LeaseClock;
  readonly #defaultLeaseMs: number;
  readonly #capacity = new CapacityBook();
  readonly #active = new Map<string, LiveRecord>();
  readonly #leases: LeaseSchedule<LiveRecord>;
  readonly #recent: RecentRecords;
  readonly #listeners = new Set<(event: LedgerEvent) => void>();
  readonly #metrics: LedgerMetrics | undefined;
  readonly #activeCounts: Record<ActiveState, number> = { reserved: 0, prefilling: 0, transferring: 0 };
  readonly #ended: Record<FinalState, number> = { done: 0, failed: 0, expired: 0, released: 0 };
  readonly #unsubscribe: () => void;
  #bytesMoved = 0;
  #blocksMoved = 0;
  #closed = false;

  /**
   * Creates a ledger over the instances `cluster` knows now and follows its changes.
   * @example const ledger = new KvLedger({ cluster: registry, metrics: registry });
   */
  constructor(options: LedgerOptions) {
    this.#clock = options.clock ?? systemClock;
    this.#defaultLeaseMs = leaseArg(options.defaultLeaseMs ?? DEFAULT_LEASE_MS, 'defaultLeaseMs');
    const recentCapacity = countArg(options.recentCapacity ?? DEFAULT_RECENT_CAPACITY, 'recentCapacity');
    this.#recent = new RecentRecords(recentCapacity);
    this.#leases = new LeaseSchedule(this.#clock, () => this.#expireDue());
    for (const instance of options.cluster.all()) this.#capacity.upsert(instance);
    this.#unsubscribe = options.cluster.onChange((diff) => this.#apply(diff));
    this.#metrics =
      options.metrics === undefined
        ? undefined
        : new LedgerMetrics(options.metrics, { accounts: () => this.#capacity.accounts(), activeCounts: () => this.#activeCounts });
  }

  /**
   * Reserves slots and blocks on P and D for one request, both or neither.
   * @throws PdlinkError `conflict` for an id that is still active (an ended id may be reserved again), `unavailable` for an unknown instance,
   *   `insufficient_capacity` naming the instance and resource that fell short, `bad_request` for bad arguments.
   * @example ledger.reserve({ requestId: 'r2', p: 0, d: 1, pBlocks: 16, dBlocks: 16, phase: 'prefilling' }); // reserved and begun at once
   */
  reserve(request: ReserveRequest): TransferRecord {
    if (this.#closed) throw errors.unavailable('the KV ledger is closed');
    const { requestId, clientRequestId, p, d, slots, pBlocks, dBlocks, leaseMs, phase } = reserveArgs(request, this.#defaultLeaseMs);
    this.#expireDue();
    if (this.#active.has(requestId)) throw errors.transferExists(requestId);
    this.#capacity.require(p, d, slots, pBlocks, dBlocks);
    const now = this.#clock.now();
    const record = new LiveRecord(requestId, p, d, slots, pBlocks, dBlocks, leaseMs, now + leaseMs, now, clientRequestId);
    if (phase !== undefined) record.enter(phase, now);
    this.#capacity.take(record);
    this.#active.set(requestId, record);
    this.#activeCounts[record.state as ActiveState]++;
    this.#leases.set(record, record.deadline);
    const view = record.view();
    this.#emit(view, null);
    return view;
  }

  /**
   * Moves an active record forward to `phase` and renews its lease (progress proves someone still drives it).
   * @throws PdlinkError `conflict` when the phase is not later than the current one or the record ended.
   * @example ledger.begin('r1', 'transferring');
   */
  begin(requestId: string, phase: TransferPhase): TransferRecord {
    phaseArg(phase, 'phase');
    const action = `begin ${phase}`;
    const record = this.#live(requestId, action);
    const from = record.state as ActiveState;
    if (!canBegin(from, phase)) throw errors.illegalTransition(requestId, from, action);
    const now = this.#clock.now();
    record.enter(phase, now);
    this.#activeCounts[from]--;
    this.#activeCounts[phase]++;
    this.#leases.set(record, now + record.leaseMs);
    const view = record.view();
    this.#emit(view, from);
    return view;
  }

  /**
   * Ends a started record as done, releasing its reservations and counting what it moved.
   * @throws PdlinkError `conflict` on a record still `reserved` (begin first) or already ended.
   * @example ledger.complete('r1', { bytes: 4 << 20, blocks: 16 });
   */
  complete(requestId: string, report: CompleteReport = {}): TransferRecord {
    const record = this.#live(requestId, 'complete');
    const bytes = countArg(report.bytes ?? 0, 'bytes');
    const blocks = countArg(report.blocks ?? record.dBlocks, 'blocks');
    if (record.state === 'reserved') throw errors.illegalTransition(requestId, 'reserved', 'complete before a phase began');
    record.bytes = bytes;
    record.blocksMoved = blocks;
    this.#bytesMoved += bytes;
    this.#blocksMoved += blocks;
    const view = this.#end(record, 'done', null, null);
    const started = record.transferringAt;
    this.#metrics?.moved(bytes, blocks, started === null ? null : Math.max(0, (view.endedAt ?? started) - started) / 1000);
    return view;
  }

  /**
   * Ends an active record as failed with `code` (e.g. `LLM_WAIT_PROC_TIMEOUT`), releasing its reservations.
   * @example ledger.fail('r1', 'upstream_failed', 'P answered 500');
   */
  fail(requestId: string, code: string, detail?: string): TransferRecord {
    const record = this.#live(requestId, 'fail');
    return this.#end(record, 'failed', codeArg(code, 'code'), detail ?? null);
  }

  /**
   * Ends an active record without a result (client gone, link unlinked...), releasing its reservations.
   * @example ledger.release('r1', 'client_abort');
   */
  release(requestId: string, reason: ReleaseReason): TransferRecord {
    const record = this.#live(requestId, 'release');
    return this.#end(record, 'released', reasonArg(reason, 'reason'), null);
  }

  /**
   * Moves an active record's decode side to another D while it proves P holds the blocks
   * (LiveRecord.holdRefusal); on a refusal the record keeps its old D.
   * @throws PdlinkError `conflict` (ended, or no hold proved), `insufficient_capacity`, `unavailable`.
   * @example ledger.moveDecode('r1', 12, 16);
   */
  moveDecode(requestId: string, d: number, dBlocks: number): TransferRecord {
    const action = 'move its decode side';
    const record = this.#live(requestId, action);
    countArg(d, 'd');
    countArg(dBlocks, 'dBlocks');
    const refusal = record.holdRefusal(this.#clock.now());
    if (refusal !== undefined) throw errors.illegalTransition(requestId, record.state, `${action}: ${refusal}`);
    const previous = this.#capacity.moveDecode(record, d, dBlocks);
    if (previous === undefined) return record.view();
    // Progress: the lease starts again.
    this.#leases.set(record, this.#clock.now() + record.leaseMs);
    const view = record.view();
    this.#emit(view, view.state, previous);
    return view;
  }

  /**
   * Renews an active record's lease: it now ends `ms` from now (default: the record's lease length).
   * @example ledger.extend('r1', 10_000);
   */
  extend(requestId: string, ms?: number): TransferRecord {
    const record = this.#live(requestId, 'extend its lease');
    const leaseMs = leaseArg(ms ?? record.leaseMs, 'ms');
    this.#leases.set(record, this.#clock.now() + leaseMs);
    return record.view();
  }

  /**
   * Releases (reason `unlink`) every active record on the P→D pair whose link went away.
   * @example const released = ledger.linkLost(0, 1);
   */
  linkLost(pId: number, dId: number): TransferRecord[] {
    countArg(pId, 'pId');
    countArg(dId, 'dId');
    this.#expireDue();
    const released: TransferRecord[] = [];
    for (const record of this.#capacity.recordsOn(pId)) {
      if (record.p !== pId || record.d !== dId) continue;
      const view = this.#endIfActive(record, 'released', 'unlink', `link ${pId}→${dId} went away`);
      if (view !== undefined) released.push(view);
    }
    return released;
  }

  /**
   * The record of a request: the active one, else the latest ended one still kept.
   * @example ledger.get('r1')?.state
   */
  get(requestId: string): TransferRecord | undefined {
    this.#expireDue();
    return this.#active.get(requestId)?.view() ?? this.#recent.get(requestId);
  }

  /**
   * Whether the request holds an active reservation.
   * @example if (ledger.isActive(id)) ledger.release(id, 'client_abort');
   */
  isActive(requestId: string): boolean {
    this.#expireDue();
    return this.#active.has(requestId);
  }

  /**
   * O(1) load of one instance for the scheduler; undefined for an unknown one.
   * @example const load = ledger.instanceLoad(0); load?.availBlocks
   */
  instanceLoad(id: number): InstanceLoad | undefined {
    this.#expireDue();
    return this.#capacity.load(id);
  }

  /**
   * instanceLoad's reservations, read in place (no copy: a refresh reads thousands).
   * @example ledger.reservedOn(0)?.reservedBlocks
   */
  reservedOn(id: number): Pick<InstanceLoad, 'reservedSlots' | 'reservedBlocks'> | undefined {
    this.#expireDue();
    return this.#capacity.account(id);
  }

  /**
   * Running totals.
   * @example ledger.totals().reservedBlocks // 0 when idle
   */
  totals(): LedgerTotals {
    this.#expireDue();
    return {
      active: this.#active.size,
      reservedSlots: this.#capacity.reservedSlots,
      reservedBlocks: this.#capacity.reservedBlocks,
      bytesMoved: this.#bytesMoved,
      blocksMoved: this.#blocksMoved,
      ...this.#ended,
    };
  }

  /**
   * Everything the ledger holds, as plain data.
   * @example const { active, totals } = ledger.snapshot();
   */
  snapshot(): LedgerSnapshot {
    const totals = this.totals();
    const instances = this.#capacity.instances();
    return { active: [...this.#active.values()].map((r) => r.view()), recent: this.#recent.list(), totals, instances };
  }

  /**
   * Subscribes to record changes; returns the unsubscribe function. A throwing listener is logged.
   * @example const off = ledger.onRecord(({ record, from }) => console.log(from, '→', record.state));
   */
  onRecord(listener: (event: LedgerEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Releases every active record (`shutdown`), stops following the cluster, disarms the timer; idempotent.
   * @example ledger.close();
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    for (const record of [...this.#active.values()]) this.#endIfActive(record, 'released', 'shutdown', null);
    this.#leases.stop();
  }

  #live(requestId: string, action: string): LiveRecord {
    requestIdArg(requestId, 'requestId');
    this.#expireDue();
    const record = this.#active.get(requestId);
    if (record !== undefined) return record;
    const ended = this.#recent.get(requestId);
    if (ended !== undefined) throw errors.illegalTransition(requestId, ended.state, action);
    throw errors.transferNotFound(requestId);
  }

  #end(record: LiveRecord, state: FinalState, code: string | null, detail: string | null): TransferRecord {
    const from = record.state as ActiveState;
    this.#capacity.giveBack(record);
    this.#active.delete(record.requestId);
    this.#leases.remove(record);
    this.#activeCounts[from]--;
    this.#ended[state]++;
    record.state = state;
    record.code = code;
    record.detail = detail;
    record.endedAt = this.#clock.now();
    const view = record.view();
    this.#recent.push(view);
    this.#metrics?.ended(state);
    this.#emit(view, from);
    return view;
  }

  /** For loops over a copied list: a listener reacting to an earlier ending may already have ended this record. */
  #endIfActive(record: LiveRecord, state: FinalState, code: string | null, detail: string | null): TransferRecord | undefined {
    return this.#active.get(record.requestId) === record ? this.#end(record, state, code, detail) : undefined;
  }

  #expireDue(): void {
    for (let record = this.#leases.due(); record !== undefined; record = this.#leases.due()) {
      this.#end(record, 'expired', LEASE_EXPIRED, `lease of ${record.leaseMs} ms ran out in state ${record.state}`);
    }
  }

  #emit(record: TransferRecord, from: TransferState | null, movedFrom?: number): void {
    const event: LedgerEvent = movedFrom === undefined ? { record, from } : { record, from, movedFrom };
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (err) {
        console.error('pdlink: KV ledger listener failed', err);
      }
    }
  }

  #apply(diff: RegistryDiff): void {
    // Leases already past their deadline end as expired, not as casualties of this refresh.
    this.#expireDue();
    // Removals first: a role change arrives as removal plus addition of the same id.
    for (const instance of diff.removed) this.#remove(instance.id);
    for (const instance of diff.added) this.#capacity.upsert(instance);
    for (const { after } of diff.updated) this.#capacity.upsert(after);
  }

  #remove(id: number): void {
    // The account closes before any record ends (CapacityBook.giveBack); one losing only its D keeps P's side.
    for (const record of this.#capacity.remove(id)) {
      if (this.#active.get(record.requestId) !== record) continue;
      if (record.p === id) {
        this.#end(record, 'failed', INSTANCE_REMOVED, `instance ${id} was removed by a refresh`);
        continue;
      }
      this.#capacity.dropDecode(record);
      const view = record.view();
      this.#emit(view, view.state, id);
    }
  }
}
