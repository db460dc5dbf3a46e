/**
 * The shapes of the transfer API (transfers.ts): cache specs, requests, and the plain
 * data it answers with.
 */
import type { StatusName } from '../../core/llm-status.ts';
import type { BlockList } from './args.ts';
import type { TransferOp } from './metrics.ts';

export interface CacheSpec {
  readonly cacheId: bigint;
  readonly numBlocks: number;
  readonly blockBytes: number;
}

export interface CacheInfo extends CacheSpec {
  readonly endpoint: string;
}

/** A runtime status as data; `message` says more when there is more to say. */
export interface CallStatus {
  readonly ret: number;
  readonly retName: StatusName;
  readonly message?: string;
  /** Set when an argument was refused (ret LLM_PARAM_INVALID) before the runtime was asked. */
  readonly refused?: { readonly field: string; readonly reason: string };
}

export interface TransferResult extends CallStatus {
  /** Bytes and blocks moved, also when the transfer failed or was aborted part way. */
  readonly bytes: number;
  readonly blocks: number;
  /** The caller's signal stopped it (ret is then LLM_FAILED). */
  readonly aborted: boolean;
}

export interface TransferCommon {
  /** Local device endpoint (default: the first). */
  readonly endpoint?: string;
  readonly remoteClusterId: bigint;
  /** int32 > 0, default 1000 (LLM-DataDist's sync_kv_timeout); queueing counts against it. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** Peer's blocks `srcBlocks` of `remoteCacheId` → our blocks `dstBlocks` of `dstCacheId`. */
export interface PullRequest extends TransferCommon {
  readonly remoteCacheId: bigint;
  readonly srcBlocks: BlockList;
  readonly dstCacheId: bigint;
  readonly dstBlocks: BlockList;
}

/** Our blocks `srcBlocks` of `srcCacheId` → the peer's blocks `dstBlocks` of `remoteCacheId`. */
export interface PushRequest extends TransferCommon {
  readonly srcCacheId: bigint;
  readonly srcBlocks: BlockList;
  readonly remoteCacheId: bigint;
  readonly dstBlocks: BlockList;
}

/** A transfer in progress, as `active()` lists it. */
export interface ActiveTransfer {
  readonly id: number;
  readonly op: TransferOp;
  readonly endpoint: string;
  readonly remoteClusterId: bigint;
  readonly blocks: number;
  readonly blocksDone: number;
  /** A worker is inside a runtime call for it right now. */
  readonly inRuntime: boolean;
  readonly startedAt: number;
}
