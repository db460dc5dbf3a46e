/**
 * What crosses to a worker for KV block work: cache registration, local writes and reads, and
 * pulls/pushes over a link. Block lists and data travel in SharedArrayBuffers (never as cloned
 * arrays of numbers); a transfer also carries a small shared control array through which the main
 * thread asks it to stop and watches its progress, and from which its slices (several may run at
 * once, on different workers) claim the next chunk of the lists.
 */

/** Blocks of one pull or push, the runtime's bound (PDRT_MAX_BLOCKS_PER_TRANSFER, mirrored in ffi/). */
export { MAX_BLOCKS_PER_TRANSFER } from '../ffi/layout.ts';

/** Slots of a transfer's control array (Int32Array over a SharedArrayBuffer). */
export const CONTROL = {
  /** Set to 1 by the main thread: stop before the next chunk. */
  abort: 0,
  /** Blocks moved so far, over all slices (added after every chunk). */
  done: 1,
  /** Slices inside a runtime call of this transfer right now. */
  inRuntime: 2,
  /**
   * Slices running now. A worker counts itself in before it reads `abort`, the main thread sets
   * `abort` before it reads this: if the main thread sees 0, no chunk will start.
   */
  inSlice: 3,
  /** Index of the first block no slice has claimed yet. */
  next: 4,
  /** Set to 1 by the first slice whose chunk failed: the others claim no more. */
  failed: 5,
} as const;
export const CONTROL_SLOTS = 6;

export interface RegisterBlocksTask {
  readonly op: 'kv-register';
  readonly handle: number;
  readonly cacheId: bigint;
  readonly numBlocks: number;
  readonly blockBytes: number;
}

export interface UnregisterBlocksTask {
  readonly op: 'kv-unregister';
  readonly handle: number;
  readonly cacheId: bigint;
}

/** Local copy into (`write`) or out of (`read`) a cache; `data` is a view over a SharedArrayBuffer. */
export interface CopyBlocksTask {
  readonly op: 'kv-write' | 'kv-read';
  readonly handle: number;
  readonly cacheId: bigint;
  /** Block indices, a view over a SharedArrayBuffer. */
  readonly blocks: Uint32Array;
  readonly data: Uint8Array;
}

/**
 * One slice of a pull or push: claims chunks of at most `chunkBlocks` from the lists (one runtime
 * call each) until none is left, a call fails, the abort flag is set, or `sliceMs` have passed (the
 * main thread then queues another slice, so long transfers share the threads).
 */
export interface TransferTask {
  readonly op: 'kv-pull' | 'kv-push';
  readonly handle: number;
  readonly remoteClusterId: bigint;
  readonly remoteCacheId: bigint;
  readonly localCacheId: bigint;
  /** Remote block indices then local block indices, `n` of each (Uint32, SharedArrayBuffer). */
  readonly lists: SharedArrayBuffer;
  readonly n: number;
  readonly chunkBlocks: number;
  readonly sliceMs: number;
  /** Epoch ms by which the whole transfer must have returned; every runtime call gets what remains. */
  readonly deadline: number;
  readonly timeoutMs: number;
  readonly control: SharedArrayBuffer;
}

/** PDRT_OPT_SAME_HOST_FASTPATH of a context (links made afterwards). */
export interface FastpathTask {
  readonly op: 'kv-fastpath';
  readonly handle: number;
  readonly enabled: boolean;
}

export type BlockTask = RegisterBlocksTask | UnregisterBlocksTask | CopyBlocksTask | TransferTask | FastpathTask;
export type BlockOp = BlockTask['op'];

/**
 * How a transfer slice ended: nothing left to claim, or a call failed (`complete`, see `rc`), time
 * budget spent with blocks left (`sliced`), or the abort flag seen between chunks (`aborted`).
 */
export type SliceEnd = 'complete' | 'sliced' | 'aborted';

/** Value of every block task's reply: the runtime's status, as data. */
export interface BlockReply {
  readonly rc: number;
  /** Transfers: blocks moved by this slice (0 for other tasks). */
  readonly done: number;
  readonly end: SliceEnd;
  /** Why a call failed, when the runtime or the facade said more than the code. */
  readonly message?: string;
}
