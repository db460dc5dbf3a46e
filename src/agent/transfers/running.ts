/**
 * A transfer on its way through the workers: the shared control words its slices claim chunks from
 * and report progress in, the task they share, and the promise of its result. Launching lives apart
 * from the transfer API so the API reads as checks and bookkeeping, and this as the hand-off.
 */
import { CONTROL_SLOTS, type TransferTask } from '../../workers/block-protocol.ts';
import type { WorkerPool } from '../../workers/pool.ts';
import type { TransferOp } from './metrics.ts';
import { runSlices } from './slices.ts';
import { status } from './status.ts';
import type { TransferCommon, TransferResult } from './types.ts';

/** A transfer in flight, as the API lists it and its metrics read it. */
export interface Running {
  readonly id: number;
  readonly op: TransferOp;
  readonly endpoint: string;
  readonly remoteClusterId: bigint;
  readonly n: number;
  readonly control: Int32Array;
  readonly startedAt: number;
  readonly done: Promise<TransferResult>;
}

/** A transfer whose arguments passed every check, ready to cross to the workers. */
export interface Checked {
  readonly endpoint: string;
  readonly handle: number;
  readonly remoteCacheId: bigint;
  readonly localCacheId: bigint;
  readonly timeoutMs: number;
  readonly lists: SharedArrayBuffer;
  readonly n: number;
  readonly blockBytes: number;
}

/** How the transfer API cuts its transfers into work for the pool. */
export interface SliceSettings {
  readonly pool: WorkerPool;
  readonly chunkBytes: number;
  readonly sliceMs: number;
  readonly parallel: number;
}

/**
 * Hands a checked transfer to the workers in slices; `started` is the monotonic start its duration is measured from.
 * @example const { running, started } = launchTransfer(id, 'pull', request, checked, settings);
 */
export function launchTransfer(
  id: number,
  op: TransferOp,
  request: TransferCommon,
  checked: Checked,
  settings: SliceSettings,
): { readonly running: Running; readonly started: number } {
  const control = new Int32Array(new SharedArrayBuffer(CONTROL_SLOTS * 4));
  const started = performance.now();
  const task: TransferTask = {
    op: op === 'pull' ? 'kv-pull' : 'kv-push',
    handle: checked.handle,
    remoteClusterId: request.remoteClusterId,
    remoteCacheId: checked.remoteCacheId,
    localCacheId: checked.localCacheId,
    lists: checked.lists,
    n: checked.n,
    chunkBlocks: Math.max(1, Math.floor(settings.chunkBytes / checked.blockBytes)),
    sliceMs: settings.sliceMs,
    deadline: Date.now() + checked.timeoutMs,
    timeoutMs: checked.timeoutMs,
    control: control.buffer as SharedArrayBuffer,
  };
  const done = runSlices({
    pool: settings.pool,
    task,
    parallel: Math.min(settings.parallel, settings.pool.threads),
    ...(request.signal === undefined ? {} : { signal: request.signal }),
  }).then((o): TransferResult => ({
    ...status(o.rc, o.message),
    bytes: o.moved * checked.blockBytes,
    blocks: o.moved,
    aborted: o.aborted,
  }));
  const running = {
    id,
    op,
    endpoint: checked.endpoint,
    remoteClusterId: request.remoteClusterId,
    n: checked.n,
    control,
    startedAt: Date.now(),
    done,
  };
  return { running, started };
}
