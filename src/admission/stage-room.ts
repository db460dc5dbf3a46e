/**
 * Saturation per stage: how many more requests the prefill instances can start now, and how many
 * the decode instances can take, each counted apart, so that a decode-bound cluster stops admitting
 * prefills it could not decode while its P's sit idle, and a request D prefills itself (conditional
 * disaggregation) needs room on D only. An instance's room is what it last reported free (the
 * refresh's dynamic info) minus what this process holds there (the KV ledger), within the per-instance
 * request cap and within the stage's own limits: in-flight prefills and queued prefill tokens per P,
 * in-flight decodes and the share of KV blocks in use per D.
 *
 * Everything is kept up to date from the registry's diffs and the ledger's record events, one
 * instance at a time, so asking whether a stage has room is two additions, whatever the cluster size.
 */
import type { Instance, RegistryDiff } from '../cluster/instance.ts';
import type { StageLimits } from './settings.ts';

/** What stage room reads of the cluster registry. */
export interface RoomCluster {
  get(id: number): Instance | undefined;
  all(): readonly Instance[];
  onChange(listener: (diff: RegistryDiff) => void): () => void;
}

/** The part of a ledger record stage room counts (the ledger's TransferRecord fits). */
export interface RoomRecord {
  readonly p: number;
  readonly d: number;
  readonly state: string;
  readonly pBlocks: number;
}

/** What stage room reads of the KV ledger (`KvLedger` fits). */
export interface RoomLedger {
  reservedOn(id: number): { readonly reservedSlots: number; readonly reservedBlocks: number } | undefined;
  onRecord(
    listener: (event: { readonly record: RoomRecord; readonly from: string | null; readonly movedFrom?: number }) => void,
  ): () => void;
}

/** One instance as stage room counts it. */
interface Place {
  role: 'prefill' | 'decode';
  units: number;
  /** Records with P here still prefilling (P ≠ D), and their prompt blocks. */
  prefills: number;
  prefillBlocks: number;
  /** Records with D here. */
  decodes: number;
}

/** The load of one stage, for metrics and the dashboard. */
export interface StageLoad {
  /** Instances of the stage. */
  readonly instances: number;
  /** Requests the stage can still start. */
  readonly room: number;
  readonly inFlight: number;
}

export class StageRoom {
  readonly #cluster: RoomCluster;
  readonly #ledger: RoomLedger;
  readonly #limits: StageLimits;
  readonly #maxPerInstance: number;
  readonly #places = new Map<number, Place>();
  readonly #onMore: () => void;
  readonly #offs: (() => void)[];
  #prefillRoom = 0;
  #decodeRoom = 0;
  #prefillInstances = 0;
  #decodeInstances = 0;

  /**
   * Follows `cluster` and `ledger`; `onMore` runs whenever a stage gained room.
   * @example const room = new StageRoom(registry, ledger, settings.stages, 1000, () => admission.dispatch());
   */
  constructor(cluster: RoomCluster, ledger: RoomLedger, limits: StageLimits, maxPerInstance: number, onMore: () => void) {
    this.#cluster = cluster;
    this.#ledger = ledger;
    this.#limits = limits;
    this.#maxPerInstance = maxPerInstance;
    this.#onMore = onMore;
    for (const instance of cluster.all()) this.#update(instance.id);
    this.#offs = [
      cluster.onChange((diff) => this.#apply(diff)),
      ledger.onRecord(({ record, from, movedFrom }) => this.#record(record, from, movedFrom)),
    ];
  }

  /** Requests the prefill instances can still start. */
  get prefillRoom(): number {
    return this.#prefillRoom;
  }

  get decodeRoom(): number {
    return this.#decodeRoom;
  }

  /**
   * Whether a request can be started now: room on D, and on P unless D prefills it itself.
   * @example if (room.fits(true)) admit(ticket);
   */
  fits(needsPrefill: boolean): boolean {
    return this.#decodeRoom > 0 && (!needsPrefill || this.#prefillRoom > 0);
  }

  /**
   * Whether any instance could ever serve such a request: a D, and a P unless D prefills it.
   * @example if (!room.servable(true)) refuse503();
   */
  servable(needsPrefill: boolean): boolean {
    return this.#decodeInstances > 0 && (!needsPrefill || this.#prefillInstances > 0);
  }

  /**
   * Both stages' loads.
   * @example room.loads().prefill.room
   */
  loads(): { readonly prefill: StageLoad; readonly decode: StageLoad } {
    let prefills = 0;
    let decodes = 0;
    for (const place of this.#places.values()) {
      prefills += place.prefills;
      decodes += place.role === 'decode' ? place.decodes : 0;
    }
    return {
      prefill: { instances: this.#prefillInstances, room: this.#prefillRoom, inFlight: prefills },
      decode: { instances: this.#decodeInstances, room: this.#decodeRoom, inFlight: decodes },
    };
  }

  /** Stops following the registry and the ledger. */
  close(): void {
    for (const off of this.#offs) off();
  }

  #apply(diff: RegistryDiff): void {
    for (const instance of diff.removed) this.#update(instance.id);
    for (const instance of diff.added) this.#update(instance.id);
    for (const { after } of diff.updated) this.#update(after.id);
  }

  #record(record: RoomRecord, from: string | null, movedFrom: number | undefined): void {
    const { p, d } = record;
    const before = from === null ? 'none' : from;
    const after = record.state;
    const dBefore = movedFrom ?? d;
    // A record D prefills itself names D on both sides: it counts against D alone.
    if (p !== d) {
      const was = prefilling(before);
      const is = prefilling(after);
      if (was !== is) {
        const place = this.#places.get(p);
        if (place !== undefined) {
          const sign = is ? 1 : -1;
          place.prefills += sign;
          place.prefillBlocks += sign * record.pBlocks;
        }
      }
    }
    if (active(before)) {
      const place = this.#places.get(dBefore);
      if (place !== undefined) place.decodes--;
    }
    if (active(after)) {
      const place = this.#places.get(d);
      if (place !== undefined) place.decodes++;
    }
    this.#update(p);
    if (d !== p) this.#update(d);
    if (movedFrom !== undefined && movedFrom !== d) this.#update(movedFrom);
  }

  /** Recomputes one instance's room and the stage sums; tells when a stage gained room. */
  #update(id: number): void {
    const instance = this.#cluster.get(id);
    let place = this.#places.get(id);
    const role = instance?.role;
    if (instance === undefined || (role !== 'prefill' && role !== 'decode') || (place !== undefined && place.role !== role)) {
      if (place !== undefined) this.#drop(id, place);
      if (instance === undefined || (role !== 'prefill' && role !== 'decode')) return;
      place = undefined;
    }
    if (place === undefined) {
      place = { role, units: 0, prefills: 0, prefillBlocks: 0, decodes: 0 };
      this.#places.set(id, place);
      if (role === 'prefill') this.#prefillInstances++;
      else this.#decodeInstances++;
    }
    const units = this.#unitsOf(instance, place);
    const change = units - place.units;
    if (change === 0) return;
    place.units = units;
    if (role === 'prefill') this.#prefillRoom += change;
    else this.#decodeRoom += change;
    if (change > 0) this.#onMore();
  }

  #drop(id: number, place: Place): void {
    this.#places.delete(id);
    if (place.role === 'prefill') {
      this.#prefillRoom -= place.units;
      this.#prefillInstances--;
    } else {
      this.#decodeRoom -= place.units;
      this.#decodeInstances--;
    }
  }

  #unitsOf(instance: Instance, place: Place): number {
    const held = this.#ledger.reservedOn(instance.id);
    const reservedSlots = held?.reservedSlots ?? 0;
    const freeBlocks = instance.availBlocks - (held?.reservedBlocks ?? 0);
    if (freeBlocks <= 0) return 0;
    let units = Math.min(instance.availSlots - reservedSlots, this.#maxPerInstance - reservedSlots);
    const limits = this.#limits;
    if (place.role === 'prefill') {
      if (limits.prefillInFlight !== undefined) units = Math.min(units, limits.prefillInFlight - place.prefills);
      if (limits.prefillQueuedTokens !== undefined && place.prefillBlocks * instance.blockSize >= limits.prefillQueuedTokens) return 0;
    } else {
      if (limits.decodeInFlight !== undefined) units = Math.min(units, limits.decodeInFlight - place.decodes);
      if (limits.decodeKvUsage !== undefined && 1 - freeBlocks / instance.totalBlocks >= limits.decodeKvUsage) return 0;
    }
    return Math.max(0, units);
  }
}

function prefilling(state: string): boolean {
  return state === 'reserved' || state === 'prefilling';
}

function active(state: string): boolean {
  return state === 'reserved' || state === 'prefilling' || state === 'transferring';
}
