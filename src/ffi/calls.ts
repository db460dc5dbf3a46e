/**
 * The runtime's call queue (pdrt.h, "Call queue"): link and unlink calls made by the runtime's own
 * threads and answered through a thread-safe callback on this thread's event loop, so a call made
 * from the main thread blocks nothing and crosses no worker thread. The caller owns the slots, in
 * one SharedArrayBuffer (which never moves); a slot is written here, submitted, and read back
 * once its callback has come.
 */
import { LLM_STATUS } from '../core/llm-status.ts';
import { binding } from './binding.ts';
import { check, invalid } from './check.ts';
import { CLUSTER_BYTES, packClusters, type ClusterSpec } from './layout.ts';
import { loadCallQueue, runtimeLibraryPath } from './library.ts';
import { asPointer, checkBatch } from './runtime.ts';
import type { CallQueueSymbols } from './library.ts';
import type { NativeCallback } from './symbols.ts';

/** sizeof(pdrt_call) and its fields' offsets in native/include/pdrt.h (named as there). */
export const CALL_BYTES = 2496;
export const CALL_LAYOUT = {
  ctx: 0,
  deadline_ms: 8,
  op: 16,
  n: 20,
  timeout_ms: 24,
  force: 28,
  ret: 32,
  holders_known: 36,
  clusters: 64,
  rets: 2368,
  holders: 2432,
} as const;
const AT = CALL_LAYOUT;
export const CALL_OP = { link: 1, unlink: 2 } as const;
/** PDRT_CALLS_MAX_THREADS. */
export const CALLS_MAX_THREADS = 64;

export interface CallSpec {
  readonly op: keyof typeof CALL_OP;
  readonly handle: number;
  /** ClusterSpecs (checked and packed here) or `n` pdrt_cluster records as they are. */
  readonly clusters: readonly ClusterSpec[] | Uint8Array;
  readonly n: number;
  readonly timeoutMs: number;
  /** Epoch ms: the call's timeout is cut to what is left of it when a runtime thread takes it. */
  readonly deadline: number;
  readonly force: boolean;
}

export class CallQueue {
  readonly slots: number;
  readonly #symbols: CallQueueSymbols;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #records: Uint8Array[] = [];
  readonly #recordViews: DataView[] = [];
  readonly #callback: NativeCallback;
  #handle = 0;

  /**
   * Starts `threads` runtime threads over `slots` slots; `onDone(slot)` runs on this thread's event
   * loop after each call. Undefined when the runtime has no call queue.
   * @example const queue = CallQueue.open(2, 64, (slot) => settle(slot));
   */
  static open(threads: number, slots: number, onDone: (slot: number) => void, path = runtimeLibraryPath()): CallQueue | undefined {
    const symbols = loadCallQueue(path);
    return symbols === undefined ? undefined : new CallQueue(symbols, threads, slots, onDone);
  }

  private constructor(symbols: CallQueueSymbols, threads: number, slots: number, onDone: (slot: number) => void) {
    if (!Number.isInteger(threads) || threads < 1 || threads > CALLS_MAX_THREADS)
      throw invalid('threads', `must be 1..${CALLS_MAX_THREADS}`);
    if (!Number.isInteger(slots) || slots < 1) throw invalid('slots', 'must be a positive integer');
    this.#symbols = symbols;
    this.slots = slots;
    const buffer = new SharedArrayBuffer(slots * CALL_BYTES);
    this.#bytes = new Uint8Array(buffer);
    this.#view = new DataView(buffer);
    for (let i = 0; i < slots; i++) {
      const at = i * CALL_BYTES + AT.clusters;
      this.#records.push(new Uint8Array(buffer, at, 16 * CLUSTER_BYTES));
      this.#recordViews.push(new DataView(buffer, at, 16 * CLUSTER_BYTES));
    }
    this.#callback = binding.callback(1, onDone);
    const out = new BigUint64Array(1);
    const rc = symbols.pdrt_calls_create(threads, this.#bytes, slots, this.#callback.pointer, out);
    if (rc !== LLM_STATUS.LLM_SUCCESS) this.#callback.close();
    check(rc, 'pdrt_calls_create');
    this.#handle = Number(out[0]);
  }

  /**
   * Writes a call into `slot`, checking it as pdrt_link / pdrt_unlink would be checked here
   * (throws an LlmStatusError for a batch refused as a whole).
   * @example queue.fill(0, { op: 'link', handle, clusters, n: clusters.length, timeoutMs: 3000, deadline: Date.now() + 3000, force: false });
   */
  fill(slot: number, call: CallSpec): void {
    const ctx = asPointer(call.handle);
    checkBatch(call.op, call.n, call.timeoutMs);
    const records = this.#records[slot];
    if (records === undefined) throw invalid('slot', `must be 0..${this.slots - 1}`);
    if (call.clusters instanceof Uint8Array) {
      if (call.clusters.byteLength < call.n * CLUSTER_BYTES)
        throw invalid('records', `must hold ${call.n} records of ${CLUSTER_BYTES} bytes`);
      records.set(call.clusters.subarray(0, call.n * CLUSTER_BYTES));
    } else {
      if (call.clusters.length !== call.n) throw invalid('clusters', `must name ${call.n} clusters`);
      packClusters(records, this.#recordViews[slot]!, call.clusters);
    }
    const base = slot * CALL_BYTES;
    const view = this.#view;
    view.setBigUint64(base + AT.ctx, BigInt(ctx), true);
    view.setBigInt64(base + AT.deadline_ms, BigInt(Math.floor(call.deadline)), true);
    view.setUint32(base + AT.op, CALL_OP[call.op], true);
    view.setUint32(base + AT.n, call.n, true);
    view.setInt32(base + AT.timeout_ms, call.timeoutMs, true);
    view.setInt32(base + AT.force, call.force ? 1 : 0, true);
    view.setInt32(base + AT.ret, LLM_STATUS.LLM_FAILED, true);
    view.setUint32(base + AT.holders_known, 0, true);
  }

  /** Hands a filled slot to the runtime's threads; the runtime's status (non-zero: not queued). */
  submit(slot: number): number {
    return this.#symbols.pdrt_calls_submit(this.#handle, slot);
  }

  /** What pdrt_link / pdrt_unlink returned for the call in `slot`. */
  ret(slot: number): number {
    return this.#view.getInt32(slot * CALL_BYTES + AT.ret, true);
  }

  /** The code of cluster i of the call in `slot`. */
  code(slot: number, i: number): number {
    return this.#view.getInt32(slot * CALL_BYTES + AT.rets + 4 * i, true);
  }

  /** True when the runtime filled the holders of the call in `slot` (see `holder`). */
  holdersKnown(slot: number): boolean {
    return this.#view.getUint32(slot * CALL_BYTES + AT.holders_known, true) === 1;
  }

  /**
   * After a link answered LLM_ALREADY_LINK for cluster i: 'client' or 'server' when this context
   * holds that link linked, null when it does not, undefined when the runtime could not tell.
   */
  holder(slot: number, i: number): 'client' | 'server' | null | undefined {
    if (!this.holdersKnown(slot)) return undefined;
    const held = this.#view.getUint32(slot * CALL_BYTES + AT.holders + 4 * i, true);
    return held === 1 ? 'client' : held === 2 ? 'server' : null;
  }

  /** True when a runtime thread that answers waits until the callback has run (see NativeCallback). */
  get holdsCaller(): boolean {
    return this.#callback.holdsCaller;
  }

  /** Keeps the process alive while calls are out (counted). */
  ref(): void {
    this.#callback.ref();
  }

  unref(): void {
    this.#callback.unref();
  }

  /**
   * Stops the threads after the calls queued and running have ended and answered; blocks until
   * then, so call it once no call is out. Idempotent.
   */
  destroy(): void {
    if (this.#handle === 0) return;
    check(this.#symbols.pdrt_calls_destroy(this.#handle), 'pdrt_calls_destroy');
    this.#handle = 0;
    this.#callback.close();
  }
}
