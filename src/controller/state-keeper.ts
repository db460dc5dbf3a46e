/**
 * Writes the leader's stored state and reads it back at a takeover. Every write is guarded by the
 * leader key (a transaction that applies only while the key is bound to this holder's lease): a
 * guard that fails means another holder, and the leader stands down at once. Only what changed is
 * written (store/chunked.ts), one write at a time, the latest state next, at most one per
 * `minIntervalMs`. A write that fails is counted, logged with its key and reason, and the stored
 * state is invalidated (its manifest deleted: etcd allows deletes even out of space), so nobody
 * ever starts from a state a failed write left stale; it is retried until it succeeds.
 */
import { ChunkedWriter, MANIFEST, readChunked, type ChunkedRead, type ChunkedWrite } from '../store/chunked.ts';
import { StoreError, toStoreError, type StoreErrorReason } from '../store/store-error.ts';
import { KEYS, LEGACY_KEYS, type Guard, type Store } from '../store/store.ts';

/** Default least time between two writes: a burst of changes (a bring-up) becomes a few writes. */
const MIN_INTERVAL_MS = 200;
/** A failed write is tried again after this, doubling up to RETRY_MAX_MS. */
const RETRY_MS = 500;
const RETRY_MAX_MS = 5000;
/** One transaction of parts stays well inside etcd's default 1.5 MiB request and 128 operations. */
const BATCH_BYTES = 1024 * 1024;
const BATCH_OPS = 64;
const DELETES_PER_TXN = 100;

export interface StateKeeperEvents {
  /** A write committed `bytes` (parts and manifest). */
  written?(bytes: number): void;
  failed?(reason: StoreErrorReason): void;
}

export interface StateKeeperOptions {
  readonly store: Store;
  /** The leader key bound to this holder's lease; undefined while it may not act (the write waits). */
  readonly guard: () => Guard | undefined;
  /** A guarded write found the key not bound to this holder's lease. */
  readonly lost: (reason: string) => void;
  /** The records (id → JSON text) and the manifest's meta to store now. */
  readonly source: () => { records: ReadonlyMap<number, string>; meta: unknown };
  readonly log?: (line: string) => void;
  readonly events?: StateKeeperEvents;
  readonly minIntervalMs?: number;
}

export class StateKeeper {
  readonly #options: StateKeeperOptions;
  readonly #store: Store;
  readonly #writer = new ChunkedWriter(KEYS.controllerState);
  readonly #log: (line: string) => void;
  #running: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #wanted = false;
  #lastWriteAt = -Infinity;
  #retryMs = 0;
  #legacyLeft = true;
  #stopped = true;

  /** @example const keeper = new StateKeeper({ store, guard, lost, source }); keeper.start(); keeper.request(); */
  constructor(options: StateKeeperOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#log = options.log ?? (() => {});
  }

  /**
   * Reads the stored state (one read of its prefix) and remembers what is stored, so the next write
   * puts only what differs.
   * @example const read = await keeper.read(); if (read.ok) lead(decodeRecords(read.records, read.meta));
   */
  async read(): Promise<ChunkedRead> {
    const listed = await this.#store.list(KEYS.controllerState);
    this.#writer.adopt(listed);
    return readChunked(listed, KEYS.controllerState);
  }

  /** Writing is on (this controller leads). */
  start(): void {
    this.#stopped = false;
    this.#retryMs = 0;
  }

  /** Writing is off (standing by): a pending write or retry is dropped. */
  stop(): void {
    this.#stopped = true;
    this.#wanted = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The state changed: write it soon (coalesced with other changes). */
  request(): void {
    if (this.#stopped) return;
    this.#wanted = true;
    this.#kick();
  }

  /** Resolves when no write is in flight. */
  async idle(): Promise<void> {
    await this.#running;
  }

  #kick(): void {
    if (this.#running !== undefined || this.#timer !== undefined || this.#stopped || !this.#wanted) return;
    const wait =
      Math.max(this.#lastWriteAt + (this.#options.minIntervalMs ?? MIN_INTERVAL_MS), this.#lastWriteAt + this.#retryMs) - Date.now();
    if (wait > 0) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#kick();
      }, wait);
      return;
    }
    this.#running = this.#run().finally(() => {
      this.#running = undefined;
      this.#kick();
    });
  }

  async #run(): Promise<void> {
    this.#wanted = false;
    this.#lastWriteAt = Date.now();
    try {
      if ((await this.#write()) === 'held') {
        // Not allowed to act now (riding out a silent store): written once it may, not failed meanwhile.
        this.#retryMs = RETRY_MS;
        this.#wanted = true;
        return;
      }
      this.#retryMs = 0;
    } catch (err) {
      const error = toStoreError(err, KEYS.controllerState + MANIFEST);
      this.#options.events?.failed?.(error.reason);
      this.#log(`cannot write the stored state (${error.reason}): ${error.message}`);
      await this.#invalidate();
      this.#retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MS, this.#retryMs * 2));
      this.#wanted = true;
    }
  }

  async #write(): Promise<'held' | void> {
    if (this.#stopped) return;
    const guard = this.#options.guard();
    if (guard === undefined) return 'held';
    const { records, meta } = this.#options.source();
    const write = await this.#writer.prepare(records, meta);
    if (write === undefined) return;
    for (const batch of batches(write)) {
      if (!(await this.#store.commit(guard, batch, []))) return this.#lost();
    }
    const legacy = this.#legacyLeft ? LEGACY_KEYS : [];
    const first = write.obsolete.slice(0, DELETES_PER_TXN);
    if (!(await this.#store.commit(guard, new Map([[KEYS.controllerState + MANIFEST, write.manifest]]), [...first, ...legacy]))) {
      return this.#lost();
    }
    this.#legacyLeft = false;
    const deleted = [...first];
    for (let at = DELETES_PER_TXN; at < write.obsolete.length; at += DELETES_PER_TXN) {
      const some = write.obsolete.slice(at, at + DELETES_PER_TXN);
      // Unnamed keys left behind are deleted by a later write: not worth failing this one for.
      if (await this.#store.commit(guard, new Map(), some).catch(() => false)) deleted.push(...some);
    }
    this.#writer.committed(write, deleted);
    this.#options.events?.written?.(write.bytes);
  }

  /** Deletes the manifest (allowed even when etcd is out of space), so the stale state is never used. */
  async #invalidate(): Promise<void> {
    this.#writer.forget();
    const guard = this.#options.guard();
    if (guard === undefined) return;
    try {
      if (await this.#store.commit(guard, new Map(), [KEYS.controllerState + MANIFEST])) {
        this.#log('stored state invalidated until the next write succeeds');
      } else this.#lost();
    } catch (err) {
      const error = err instanceof StoreError ? err : toStoreError(err, KEYS.controllerState + MANIFEST);
      this.#log(`cannot invalidate the stored state (${error.reason}): ${error.message}`);
    }
  }

  #lost(): void {
    this.stop();
    this.#options.lost('a guarded write found the leader key not bound to this lease');
  }
}

/** The parts of a write in transactions of at most BATCH_BYTES and BATCH_OPS. */
function* batches(write: ChunkedWrite): Generator<Map<string, string>> {
  let batch = new Map<string, string>();
  let bytes = 0;
  for (const [key, value] of write.parts) {
    if (batch.size > 0 && (bytes + value.length > BATCH_BYTES || batch.size >= BATCH_OPS)) {
      yield batch;
      batch = new Map();
      bytes = 0;
    }
    batch.set(key, value);
    bytes += value.length;
  }
  if (batch.size > 0) yield batch;
}
