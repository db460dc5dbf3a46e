/**
 * Runs KV block tasks inside a worker. A transfer moves its block lists in chunks of bounded size,
 * one runtime call each with the time left before the transfer's deadline, claiming each chunk
 * from the transfer's shared control array so several slices can share one transfer. Between
 * chunks a slice looks at the abort flag (an abort stops a large pull within one chunk) and at its
 * time budget (it returns so other transfers get the thread in turn).
 */
import { LLM_STATUS } from '../core/llm-status.ts';
import { CONTROL, type BlockReply, type BlockTask, type TransferTask } from './block-protocol.ts';
import type { BlockRuntime, ChunkSpec, Status } from './block-runtime.ts';

const complete = (s: Status): BlockReply => ({
  rc: s.rc,
  done: 0,
  end: 'complete',
  ...(s.message === undefined ? {} : { message: s.message }),
});

/**
 * Runs one block task; a runtime refusal is a reply, only a broken runtime throws.
 * @example case 'kv-pull': return runBlockTask(runtime.blocks, task);
 */
export function runBlockTask(runtime: BlockRuntime | undefined, task: BlockTask): BlockReply {
  if (runtime === undefined) throw new Error('this device runtime has no KV block support');
  switch (task.op) {
    case 'kv-register':
      return complete(runtime.register(task.handle, task.cacheId, task.numBlocks, task.blockBytes));
    case 'kv-unregister':
      return complete(runtime.unregister(task.handle, task.cacheId));
    case 'kv-write':
      return complete(runtime.write(task.handle, task.cacheId, task.blocks, task.data));
    case 'kv-read':
      return complete(runtime.read(task.handle, task.cacheId, task.blocks, task.data));
    case 'kv-fastpath':
      return complete(runtime.setFastpath(task.handle, task.enabled));
    case 'kv-pull':
    case 'kv-push':
      return transferSlice(runtime, task);
  }
}

function transferSlice(runtime: BlockRuntime, task: TransferTask): BlockReply {
  const control = new Int32Array(task.control);
  Atomics.add(control, CONTROL.inSlice, 1);
  try {
    return chunks(runtime, task, control);
  } finally {
    Atomics.sub(control, CONTROL.inSlice, 1);
  }
}

function chunks(runtime: BlockRuntime, task: TransferTask, control: Int32Array): BlockReply {
  const remote = new Uint32Array(task.lists, 0, task.n);
  const local = new Uint32Array(task.lists, task.n * 4, task.n);
  const call = task.op === 'kv-pull' ? (h: number, c: ChunkSpec) => runtime.pull(h, c) : (h: number, c: ChunkSpec) => runtime.push(h, c);
  const started = Date.now();
  let moved = 0;
  for (;;) {
    if (Atomics.load(control, CONTROL.abort) !== 0) return { rc: LLM_STATUS.LLM_SUCCESS, done: moved, end: 'aborted' };
    // Another slice failed, or every chunk is claimed: this slice has nothing more to do.
    if (Atomics.load(control, CONTROL.failed) !== 0 || Atomics.load(control, CONTROL.next) >= task.n)
      return { rc: LLM_STATUS.LLM_SUCCESS, done: moved, end: 'complete' };
    if (moved > 0 && Date.now() - started >= task.sliceMs) return { rc: LLM_STATUS.LLM_SUCCESS, done: moved, end: 'sliced' };
    const left = Math.floor(task.deadline - Date.now());
    if (left < 1) {
      // Out of time between chunks (or while queued): nothing is waiting in the runtime, so the
      // link stays usable; the caller still gets the timeout it asked for.
      Atomics.store(control, CONTROL.failed, 1);
      const remaining = task.n - Atomics.load(control, CONTROL.done);
      return {
        rc: LLM_STATUS.LLM_TIMEOUT,
        done: moved,
        end: 'complete',
        message: `deadline passed with ${remaining} of ${task.n} blocks not moved`,
      };
    }
    const at = Atomics.add(control, CONTROL.next, task.chunkBlocks);
    if (at >= task.n) continue;
    const k = Math.min(task.chunkBlocks, task.n - at);
    Atomics.add(control, CONTROL.inRuntime, 1);
    let s: Status;
    try {
      s = call(task.handle, {
        remoteClusterId: task.remoteClusterId,
        remoteCacheId: task.remoteCacheId,
        remoteBlocks: remote.subarray(at, at + k),
        localCacheId: task.localCacheId,
        localBlocks: local.subarray(at, at + k),
        timeoutMs: Math.min(task.timeoutMs, left),
      });
    } finally {
      Atomics.sub(control, CONTROL.inRuntime, 1);
    }
    if (s.rc !== LLM_STATUS.LLM_SUCCESS) {
      Atomics.store(control, CONTROL.failed, 1);
      return { ...complete(s), done: moved };
    }
    moved += k;
    Atomics.add(control, CONTROL.done, k);
  }
}
