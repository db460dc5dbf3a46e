/**
 * The ledger's capacity book: one account per known instance plus the sums of what is reserved
 * across them. It exists so that every change to a reservation moves an account and the sums
 * together, in one place, and the ledger itself only decides which records hold capacity and when
 * they stop; what a hold costs on each instance is this book's business.
 */
import type { Instance } from '../cluster/instance.ts';
import { errors } from '../core/errors.ts';
import { IdMap } from '../core/id-map.ts';
import { InstanceAccount, type InstanceLoad } from './accounts.ts';
import type { LiveRecord } from './records.ts';

export class CapacityBook {
  readonly #accounts = new IdMap<InstanceAccount>();
  #reservedSlots = 0;
  #reservedBlocks = 0;

  /** Slots held, summed over instances (a record counts on both P and D). */
  get reservedSlots(): number {
    return this.#reservedSlots;
  }

  get reservedBlocks(): number {
    return this.#reservedBlocks;
  }

  /**
   * Throws unless P and D are known and can hold a new record's demand, both at once when they are the same instance.
   * @throws PdlinkError `unavailable` for an unknown instance, `insufficient_capacity` naming the instance and resource.
   * @example book.require(0, 1, 1, 16, 16);
   */
  require(p: number, d: number, slots: number, pBlocks: number, dBlocks: number): void {
    const pAccount = this.#accounts.get(p);
    if (pAccount === undefined) throw errors.instanceUnknown(p);
    const dAccount = this.#accounts.get(d);
    if (dAccount === undefined) throw errors.instanceUnknown(d);
    if (p === d) {
      // One instance playing both parts must hold both demands at once.
      pAccount.require(p, 2 * slots, pBlocks + dBlocks);
    } else {
      pAccount.require(p, slots, pBlocks);
      dAccount.require(d, slots, dBlocks);
    }
  }

  /**
   * Holds a new record's capacity on its P and D (checked by `require` first).
   * @example book.take(record);
   */
  take(record: LiveRecord): void {
    this.#accounts.get(record.p)!.take(record, record.slots, record.pBlocks);
    this.#accounts.get(record.d)!.take(record, record.slots, record.dBlocks);
    this.#reservedSlots += 2 * record.slots;
    this.#reservedBlocks += record.pBlocks + record.dBlocks;
  }

  /**
   * Gives back everything a record holds.
   * @example book.giveBack(record);
   */
  giveBack(record: LiveRecord): void {
    // An account may already be gone: remove() drops it before the ledger ends its records, so a
    // listener reacting to those endings cannot reserve on the instance being removed.
    // D's side first: on one instance playing both parts, P's give takes the record off the account.
    this.dropDecode(record);
    this.#accounts.get(record.p)?.give(record, record.slots, record.pBlocks);
    this.#reservedSlots -= record.slots;
    this.#reservedBlocks -= record.pBlocks;
  }

  /**
   * Gives back what a record holds on its D (its D left the cluster; or the record ends), keeping P's side.
   * @example book.dropDecode(record);
   */
  dropDecode(record: LiveRecord): void {
    if (!record.decodeHeld) return;
    record.decodeHeld = false;
    const account = this.#accounts.get(record.d);
    if (account?.holds(record) === true) account.give(record, record.slots, record.dBlocks);
    this.#reservedSlots -= record.slots;
    this.#reservedBlocks -= record.dBlocks;
  }

  /**
   * Moves a record's decode side to `d` with `dBlocks`, both sides or neither; returns the D it left,
   * or undefined when `d` already is its D (nothing moves).
   * @throws PdlinkError `unavailable` for an unknown `d`, `insufficient_capacity` naming it.
   * @example const previous = book.moveDecode(record, 12, 16);
   */
  moveDecode(record: LiveRecord, d: number, dBlocks: number): number | undefined {
    const next = this.#accounts.get(d);
    if (next === undefined) throw errors.instanceUnknown(d);
    if (d === record.d && record.decodeHeld) return undefined;
    next.require(d, record.slots, dBlocks);
    const previous = record.d;
    // A record whose D left holds nothing on it any more: only the new D is taken.
    this.dropDecode(record);
    record.d = d;
    record.dBlocks = dBlocks;
    record.decodeHeld = true;
    next.take(record, record.slots, dBlocks);
    this.#reservedSlots += record.slots;
    this.#reservedBlocks += dBlocks;
    return previous;
  }

  /**
   * Opens an account for a new instance or refreshes the capacity an existing one reports.
   * @example book.upsert(instance);
   */
  upsert(instance: Instance): void {
    const account = this.#accounts.get(instance.id);
    if (account === undefined) {
      this.#accounts.set(instance.id, new InstanceAccount(instance.availSlots, instance.availBlocks));
    } else {
      account.reportedSlots = instance.availSlots;
      account.reportedBlocks = instance.availBlocks;
    }
  }

  /**
   * Closes an instance's account and returns the records that held capacity on it (none for an unknown id).
   * @example for (const record of book.remove(3)) fail(record);
   */
  remove(id: number): LiveRecord[] {
    const account = this.#accounts.get(id);
    if (account === undefined) return [];
    this.#accounts.delete(id);
    return account.records();
  }

  /**
   * A copy of the records holding capacity on an instance (none for an unknown one).
   * @example for (const record of book.recordsOn(0)) ...
   */
  recordsOn(id: number): LiveRecord[] {
    const account = this.#accounts.get(id);
    return account === undefined ? [] : account.records();
  }

  /**
   * Load of one instance; undefined for an unknown one.
   * @example book.load(0)?.availBlocks
   */
  load(id: number): InstanceLoad | undefined {
    return this.#accounts.get(id)?.load();
  }

  /**
   * One instance's account, read-only, or undefined for an unknown one.
   * @example book.account(0)?.reservedSlots
   */
  account(id: number): Readonly<InstanceAccount> | undefined {
    return this.#accounts.get(id);
  }

  /**
   * Every known instance's load, by id.
   * @example book.instances()[0]?.id
   */
  instances(): (InstanceLoad & { readonly id: number })[] {
    return [...this.#accounts].map(([id, account]) => ({ id, ...account.load() })).sort((a, b) => a.id - b.id);
  }

  /**
   * The accounts themselves, for the scrape-time gauges.
   * @example for (const [id, account] of book.accounts()) ...
   */
  accounts(): Iterable<readonly [number, InstanceAccount]> {
    return this.#accounts.entries();
  }
}
