/**
 * Typed facade over a context's KV block caches and the transfers between linked contexts.
 * Block lists may be Uint32Arrays (passed as they are) or number arrays (copied into reused
 * scratch arrays). Every non-zero status is thrown as an `LlmStatusError` by `check`.
 */
import { INT32_MAX } from '../core/limits.ts';
import { check, invalid } from './check.ts';
import { checkInt, checkU64 } from './layout.ts';
import { runtimeSymbols } from './library.ts';
import { asPointer, type RuntimeHandle } from './runtime.ts';

export type BlockList = Uint32Array | readonly number[];

/** One pull or push: remoteBlocks[i] of the peer's cache ↔ localBlocks[i] of the local cache. */
export interface TransferSpec {
  readonly remoteClusterId: bigint;
  readonly remoteCacheId: bigint;
  readonly remoteBlocks: BlockList;
  readonly localCacheId: bigint;
  readonly localBlocks: BlockList;
  /** int32 > 0; LLM-DataDist's sync_kv_timeout defaults to 1000. */
  readonly timeoutMs: number;
}

const scratch: [Uint32Array, Uint32Array] = [new Uint32Array(1024), new Uint32Array(1024)];

function blockArray(list: BlockList, field: string, slot: 0 | 1): Uint32Array {
  if (list instanceof Uint32Array) return list;
  if (!Array.isArray(list)) throw invalid(field, 'must be a Uint32Array or an array of block indices');
  if (scratch[slot].length < list.length) scratch[slot] = new Uint32Array(list.length * 2);
  const out = scratch[slot];
  for (let i = 0; i < list.length; i++) {
    const v: unknown = list[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) {
      throw invalid(`${field}[${i}]`, 'must be an integer in [0, 2^32-1]');
    }
    out[i] = v;
  }
  return out.subarray(0, list.length);
}

function checkBytes(data: Uint8Array, field: string): Uint8Array {
  if (!(data instanceof Uint8Array)) throw invalid(field, 'must be a Uint8Array');
  return data;
}

/**
 * Registers numBlocks zero-filled blocks of blockBytes each under cacheId.
 * @example registerBlocks(p, 1n, 1024, 16384)
 */
export function registerBlocks(handle: RuntimeHandle, cacheId: bigint, numBlocks: number, blockBytes: number): void {
  const ctx = asPointer(handle);
  const id = checkU64(cacheId, 'cacheId');
  const rc = runtimeSymbols().pdrt_register_blocks(
    ctx,
    id,
    checkInt(numBlocks, 'numBlocks', 1, 0xffffffff),
    checkInt(blockBytes, 'blockBytes', 1, 0xffffffff),
  );
  check(rc, `pdrt_register_blocks(cache ${id})`);
}

/**
 * Unregisters a cache; transfers already running finish on the old memory.
 * @example unregisterBlocks(p, 1n)
 */
export function unregisterBlocks(handle: RuntimeHandle, cacheId: bigint): void {
  const ctx = asPointer(handle);
  const id = checkU64(cacheId, 'cacheId');
  check(runtimeSymbols().pdrt_unregister_blocks(ctx, id), `pdrt_unregister_blocks(cache ${id})`);
}

/**
 * Copies data (blocks.length × blockBytes, block after block) into the listed local blocks.
 * @example writeBlocks(p, 1n, [4, 9], bytes)
 */
export function writeBlocks(handle: RuntimeHandle, cacheId: bigint, blocks: BlockList, data: Uint8Array): void {
  const ctx = asPointer(handle);
  const id = checkU64(cacheId, 'cacheId');
  const list = blockArray(blocks, 'blocks', 0);
  const src = checkBytes(data, 'data');
  check(runtimeSymbols().pdrt_write_blocks(ctx, id, list, list.length, src, src.byteLength), `pdrt_write_blocks(cache ${id})`);
}

/**
 * Copies the listed local blocks into `into` (blocks.length × blockBytes bytes).
 * @example readBlocks(d, 2n, [0, 1], new Uint8Array(2 * 16384))
 */
export function readBlocks(handle: RuntimeHandle, cacheId: bigint, blocks: BlockList, into: Uint8Array): void {
  const ctx = asPointer(handle);
  const id = checkU64(cacheId, 'cacheId');
  const list = blockArray(blocks, 'blocks', 0);
  const dst = checkBytes(into, 'into');
  check(runtimeSymbols().pdrt_read_blocks(ctx, id, list, list.length, dst, dst.byteLength), `pdrt_read_blocks(cache ${id})`);
}

function transferArgs(spec: TransferSpec): { remote: Uint32Array; local: Uint32Array } {
  checkU64(spec.remoteClusterId, 'remoteClusterId');
  checkU64(spec.remoteCacheId, 'remoteCacheId');
  checkU64(spec.localCacheId, 'localCacheId');
  checkInt(spec.timeoutMs, 'timeoutMs', 1, INT32_MAX);
  const remote = blockArray(spec.remoteBlocks, 'remoteBlocks', 0);
  const local = blockArray(spec.localBlocks, 'localBlocks', 1);
  if (remote.length === 0) throw invalid('remoteBlocks', 'must list at least one block');
  if (local.length !== remote.length) throw invalid('localBlocks', `must list as many blocks as remoteBlocks (${remote.length})`);
  return { remote, local };
}

/**
 * Reads the peer's blocks into local blocks over the link to remoteClusterId.
 * @example pullBlocks(d, { remoteClusterId: 1n, remoteCacheId: 1n, remoteBlocks: [3, 4], localCacheId: 2n, localBlocks: [0, 1], timeoutMs: 1000 })
 */
export function pullBlocks(handle: RuntimeHandle, spec: TransferSpec): void {
  const ctx = asPointer(handle);
  const { remote, local } = transferArgs(spec);
  const rc = runtimeSymbols().pdrt_pull_blocks(
    ctx,
    spec.remoteClusterId,
    spec.remoteCacheId,
    remote,
    spec.localCacheId,
    local,
    remote.length,
    spec.timeoutMs,
  );
  check(rc, `pdrt_pull_blocks(cluster ${spec.remoteClusterId}, cache ${spec.remoteCacheId})`);
}

/**
 * Writes local blocks into the peer's blocks over the link to remoteClusterId.
 * @example pushBlocks(d, { remoteClusterId: 1n, remoteCacheId: 1n, remoteBlocks: [3], localCacheId: 2n, localBlocks: [0], timeoutMs: 1000 })
 */
export function pushBlocks(handle: RuntimeHandle, spec: TransferSpec): void {
  const ctx = asPointer(handle);
  const { remote, local } = transferArgs(spec);
  const rc = runtimeSymbols().pdrt_push_blocks(
    ctx,
    spec.remoteClusterId,
    spec.localCacheId,
    local,
    spec.remoteCacheId,
    remote,
    remote.length,
    spec.timeoutMs,
  );
  check(rc, `pdrt_push_blocks(cluster ${spec.remoteClusterId}, cache ${spec.remoteCacheId})`);
}
