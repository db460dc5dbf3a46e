/**
 * KV block caches and transfers as the worker tasks use them: every call returns the runtime's
 * status code instead of throwing, so a refusal (unknown cache, no link, timeout) is data. The FFI
 * implementation is here; tests of the task mechanics implement the interface in plain TypeScript.
 */
import * as ffi from '../ffi/index.ts';
import { LlmStatusError } from '../core/llm-status.ts';

/** One chunk of a pull or push: remoteBlocks[i] of the peer's cache ↔ localBlocks[i] of ours. */
export interface ChunkSpec {
  readonly remoteClusterId: bigint;
  readonly remoteCacheId: bigint;
  readonly remoteBlocks: Uint32Array;
  readonly localCacheId: bigint;
  readonly localBlocks: Uint32Array;
  readonly timeoutMs: number;
}

/** A status code, and the facade's explanation when it refused or the runtime failed. */
export interface Status {
  readonly rc: number;
  readonly message?: string;
}

export interface BlockRuntime {
  register(handle: number, cacheId: bigint, numBlocks: number, blockBytes: number): Status;
  unregister(handle: number, cacheId: bigint): Status;
  write(handle: number, cacheId: bigint, blocks: Uint32Array, data: Uint8Array): Status;
  read(handle: number, cacheId: bigint, blocks: Uint32Array, into: Uint8Array): Status;
  pull(handle: number, chunk: ChunkSpec): Status;
  push(handle: number, chunk: ChunkSpec): Status;
  setFastpath(handle: number, enabled: boolean): Status;
}

const OK: Status = { rc: 0 };

/** Runs a facade call; an LlmStatusError becomes its code, anything else propagates. */
function status(call: () => void): Status {
  try {
    call();
    return OK;
  } catch (err) {
    if (err instanceof LlmStatusError) return { rc: err.code, message: err.message };
    throw err;
  }
}

const spec = (chunk: ChunkSpec): ffi.TransferSpec => ({
  remoteClusterId: chunk.remoteClusterId,
  remoteCacheId: chunk.remoteCacheId,
  remoteBlocks: chunk.remoteBlocks,
  localCacheId: chunk.localCacheId,
  localBlocks: chunk.localBlocks,
  timeoutMs: chunk.timeoutMs,
});

/** The BlockRuntime of the pool's workers, over src/ffi. */
export const ffiBlockRuntime: BlockRuntime = {
  register: (handle, cacheId, numBlocks, blockBytes) => status(() => ffi.registerBlocks(handle, cacheId, numBlocks, blockBytes)),
  unregister: (handle, cacheId) => status(() => ffi.unregisterBlocks(handle, cacheId)),
  write: (handle, cacheId, blocks, data) => status(() => ffi.writeBlocks(handle, cacheId, blocks, data)),
  read: (handle, cacheId, blocks, into) => status(() => ffi.readBlocks(handle, cacheId, blocks, into)),
  pull: (handle, chunk) => status(() => ffi.pullBlocks(handle, spec(chunk))),
  push: (handle, chunk) => status(() => ffi.pushBlocks(handle, spec(chunk))),
  setFastpath: (handle, enabled) => status(() => ffi.setOption(handle, 'sameHostFastpath', enabled)),
};
