/**
 * Arguments of the transfer API, checked on the main thread before anything reaches a worker:
 * block lists become one SharedArrayBuffer (never a cloned array of numbers), and bad input
 * becomes an LLM_PARAM_INVALID result naming the field, as the runtime would answer it.
 */
import { INT32_MAX } from '../../core/limits.ts';
import { LLM_STATUS } from '../../core/llm-status.ts';
import { MAX_BLOCKS_PER_TRANSFER } from '../../workers/block-protocol.ts';

/** Block indices: a Uint32Array is taken as it is, an array is checked item by item. */
export type BlockList = Uint32Array | readonly number[];

/** LLM-DataDist's `sync_kv_timeout` default for pulls and pushes. */
export const DEFAULT_TRANSFER_TIMEOUT_MS = 1000;
const MAX_U64 = (1n << 64n) - 1n;

/** A refused argument: the code the caller gets, the argument and why. */
export class ArgumentRefused {
  readonly code = LLM_STATUS.LLM_PARAM_INVALID;
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {}

  get message(): string {
    return `${this.field}: ${this.reason}`;
  }
}

/**
 * Returns `value` if it is a uint64 bigint, else an ArgumentRefused naming `field`.
 * @example const id = u64(request.dstCacheId, 'dstCacheId');
 */
export function u64(value: bigint, field: string): bigint | ArgumentRefused {
  return typeof value === 'bigint' && value >= 0n && value <= MAX_U64
    ? value
    : new ArgumentRefused(field, `must be a bigint in [0, 2^64-1]`);
}

/**
 * The timeout in ms (default 1000), or an ArgumentRefused when it is not an int32 > 0.
 * @example const timeoutMs = timeoutArg(request.timeoutMs);
 */
export function timeoutArg(value: number | undefined): number | ArgumentRefused {
  const t = value ?? DEFAULT_TRANSFER_TIMEOUT_MS;
  return Number.isInteger(t) && t >= 1 && t <= INT32_MAX ? t : new ArgumentRefused('timeoutMs', `must be an integer in [1, ${INT32_MAX}]`);
}

/**
 * Copies one block list into a view over a new SharedArrayBuffer.
 * @example const blocks = sharedList([3, 9], 'blocks');
 */
export function sharedList(list: BlockList, field: string): Uint32Array | ArgumentRefused {
  const n = lengthOf(list, field);
  if (n instanceof ArgumentRefused) return n;
  const out = new Uint32Array(new SharedArrayBuffer(n * 4));
  const bad = fill(out, 0, list, field);
  return bad ?? out;
}

/**
 * The remote list then the local list, `n` u32 each, in one SharedArrayBuffer.
 * @example const { lists, n } = pairedLists(request.srcBlocks, 'srcBlocks', request.dstBlocks, 'dstBlocks');
 */
export function pairedLists(
  remote: BlockList,
  remoteField: string,
  local: BlockList,
  localField: string,
): { lists: SharedArrayBuffer; n: number } | ArgumentRefused {
  const n = lengthOf(remote, remoteField);
  if (n instanceof ArgumentRefused) return n;
  const m = lengthOf(local, localField);
  if (m instanceof ArgumentRefused) return m;
  if (m !== n) return new ArgumentRefused(localField, `must list as many blocks as ${remoteField} (${n}), got ${m}`);
  const lists = new SharedArrayBuffer(n * 8);
  const view = new Uint32Array(lists);
  return fill(view, 0, remote, remoteField) ?? fill(view, n, local, localField) ?? { lists, n };
}

function lengthOf(list: BlockList, field: string): number | ArgumentRefused {
  if (!(list instanceof Uint32Array) && !Array.isArray(list))
    return new ArgumentRefused(field, `must be a Uint32Array or an array of block indices`);
  if (list.length === 0) return new ArgumentRefused(field, `must list at least one block`);
  if (list.length > MAX_BLOCKS_PER_TRANSFER) return new ArgumentRefused(field, `at most ${MAX_BLOCKS_PER_TRANSFER} blocks per call`);
  return list.length;
}

function fill(out: Uint32Array, at: number, list: BlockList, field: string): ArgumentRefused | undefined {
  if (list instanceof Uint32Array) {
    out.set(list, at);
    return undefined;
  }
  for (let i = 0; i < list.length; i++) {
    const v: unknown = list[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff)
      return new ArgumentRefused(`${field}[${i}]`, `must be an integer in [0, 2^32-1]`);
    out[at + i] = v;
  }
  return undefined;
}
