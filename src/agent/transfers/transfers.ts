/**
 * The instance agent's KV transfer API: block caches on the device contexts, local writes and
 * reads, and pulls/pushes over links, all run in the worker pool. Codes come back as data
 * (`{ ret, retName }`), as link calls do. A transfer's block lists cross to the worker once, in a
 * SharedArrayBuffer; workers move them in chunks of at most `chunkBytes`, up to `parallelSlices` at
 * once, and hand the thread back every `sliceMs`, so a huge pull neither starves others nor
 * ignores an abort for long.
 */
import { optionErrors } from '../../core/errors.ts';
import { LLM_STATUS, normalizeStatus } from '../../core/llm-status.ts';
import type { Registry } from '../../core/metrics.ts';
import { CONTROL, type BlockReply } from '../../workers/block-protocol.ts';
import type { WorkerPool } from '../../workers/pool.ts';
import type { RuntimeLink } from '../../workers/protocol.ts';
import { ArgumentRefused, pairedLists, sharedList, timeoutArg, u64, type BlockList } from './args.ts';
import { createTransferMetrics, type TransferMetrics, type TransferOp } from './metrics.ts';
import { launchTransfer, type Checked, type Running } from './running.ts';
import { refusal, status } from './status.ts';
import type {
  ActiveTransfer,
  CacheInfo,
  CacheSpec,
  CallStatus,
  PullRequest,
  PushRequest,
  TransferCommon,
  TransferResult,
} from './types.ts';

export type { ActiveTransfer, CacheInfo, CacheSpec, CallStatus, PullRequest, PushRequest, TransferResult } from './types.ts';

/**
 * Bytes per runtime call of a transfer: about 1 ms of copying over shared memory and 5 ms over
 * loopback TCP at the rates of bench/results/transfer.md, so an abort lands that fast, and a 32 MiB
 * pull already splits across parallel slices.
 */
export const DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024;
/** Time a transfer holds a worker before it queues again behind others. */
export const DEFAULT_SLICE_MS = 50;
/** Slices of one transfer running at once: the 1 MiB rows of bench/results/transfer.md compare one and two. */
export const DEFAULT_PARALLEL_SLICES = 2;

export interface TransfersOptions {
  readonly pool: WorkerPool;
  /** Runtime context handle of each local endpoint; the first is the default endpoint. */
  readonly handles: ReadonlyMap<string, number>;
  readonly registry?: Registry;
  /** Pool for `links()` (default: `pool`): one that stalled transfers cannot fill. */
  readonly listPool?: WorkerPool;
  readonly chunkBytes?: number;
  readonly sliceMs?: number;
  /** Slices of one transfer that may run at once, on different workers (default 2). */
  readonly parallelSlices?: number;
}

export class Transfers {
  readonly #pool: WorkerPool;
  readonly #listPool: WorkerPool;
  readonly #handles: ReadonlyMap<string, number>;
  readonly #defaultEndpoint: string | undefined;
  readonly #chunkBytes: number;
  readonly #sliceMs: number;
  readonly #parallel: number;
  readonly #caches = new Map<string, CacheInfo>();
  readonly #running = new Map<number, Running>();
  readonly #metrics: TransferMetrics;
  #nextId = 1;
  #closed = false;

  constructor(options: TransfersOptions) {
    this.#pool = options.pool;
    this.#listPool = options.listPool ?? options.pool;
    this.#handles = options.handles;
    this.#defaultEndpoint = options.handles.keys().next().value;
    this.#chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    this.#sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
    this.#parallel = options.parallelSlices ?? DEFAULT_PARALLEL_SLICES;
    if (!Number.isInteger(this.#parallel) || this.#parallel < 1) throw optionErrors.positiveInteger('parallelSlices');
    if (!Number.isSafeInteger(this.#chunkBytes) || this.#chunkBytes < 1) throw optionErrors.positiveInteger('chunkBytes');
    if (!Number.isFinite(this.#sliceMs) || this.#sliceMs < 0) throw optionErrors.nonNegativeNumber('sliceMs');
    this.#metrics = createTransferMetrics(options.registry, () => [...this.#running.values()]);
  }

  /**
   * Registers `numBlocks` zero-filled blocks of `blockBytes` under `cacheId` on an endpoint's context.
   * @example await transfers.registerCache('0', { cacheId: 1n, numBlocks: 1024, blockBytes: 65536 });
   */
  async registerCache(endpoint: string | undefined, spec: CacheSpec): Promise<CallStatus> {
    const where = this.#endpoint(endpoint);
    if (where instanceof ArgumentRefused) return refusal(where);
    const id = u64(spec.cacheId, 'cacheId');
    if (id instanceof ArgumentRefused) return refusal(id);
    const result = await this.#call({
      op: 'kv-register',
      handle: where.handle,
      cacheId: id,
      numBlocks: spec.numBlocks,
      blockBytes: spec.blockBytes,
    });
    if (result.ret === LLM_STATUS.LLM_SUCCESS) {
      this.#caches.set(cacheKey(where.endpoint, id), {
        endpoint: where.endpoint,
        cacheId: id,
        numBlocks: spec.numBlocks,
        blockBytes: spec.blockBytes,
      });
    }
    return result;
  }

  /**
   * Unregisters a cache; transfers already running on it finish on the old memory.
   * @example await transfers.unregisterCache('0', 1n);
   */
  async unregisterCache(endpoint: string | undefined, cacheId: bigint): Promise<CallStatus> {
    const where = this.#endpoint(endpoint);
    if (where instanceof ArgumentRefused) return refusal(where);
    const id = u64(cacheId, 'cacheId');
    if (id instanceof ArgumentRefused) return refusal(id);
    const result = await this.#call({ op: 'kv-unregister', handle: where.handle, cacheId: id });
    if (result.ret === LLM_STATUS.LLM_SUCCESS) this.#caches.delete(cacheKey(where.endpoint, id));
    return result;
  }

  /**
   * Copies `data` (blocks.length × blockBytes, block after block) into the listed local blocks.
   * @example await transfers.writeBlocks('0', 1n, [4, 9], bytes);
   */
  async writeBlocks(endpoint: string | undefined, cacheId: bigint, blocks: BlockList, data: Uint8Array): Promise<CallStatus> {
    const where = this.#endpoint(endpoint);
    if (where instanceof ArgumentRefused) return refusal(where);
    const id = u64(cacheId, 'cacheId');
    if (id instanceof ArgumentRefused) return refusal(id);
    const list = sharedList(blocks, 'blocks');
    if (list instanceof ArgumentRefused) return refusal(list);
    if (!(data instanceof Uint8Array)) return refusal(new ArgumentRefused('data', 'must be a Uint8Array'));
    // The runtime refuses a wrong length too, but without saying which argument or by how much.
    const cache = this.#caches.get(cacheKey(where.endpoint, id));
    const expected = cache === undefined ? undefined : list.length * cache.blockBytes;
    if (cache !== undefined && data.byteLength !== expected)
      return refusal(
        new ArgumentRefused('data', `must hold ${list.length} × ${cache.blockBytes} = ${expected} bytes, got ${data.byteLength}`),
      );
    // Shared memory crosses as it is; anything else is copied once into shared memory.
    const shared = data.buffer instanceof SharedArrayBuffer ? data : copyToShared(data);
    return this.#call({ op: 'kv-write', handle: where.handle, cacheId: id, blocks: list, data: shared });
  }

  /**
   * Reads the listed local blocks; `data` (over a SharedArrayBuffer) holds them block after block.
   * @example const { ret, data } = await transfers.readBlocks('0', 2n, [0, 1]);
   */
  async readBlocks(endpoint: string | undefined, cacheId: bigint, blocks: BlockList): Promise<CallStatus & { readonly data?: Uint8Array }> {
    const where = this.#endpoint(endpoint);
    if (where instanceof ArgumentRefused) return refusal(where);
    const id = u64(cacheId, 'cacheId');
    if (id instanceof ArgumentRefused) return refusal(id);
    const list = sharedList(blocks, 'blocks');
    if (list instanceof ArgumentRefused) return refusal(list);
    const cache = this.#caches.get(cacheKey(where.endpoint, id));
    if (cache === undefined)
      return status(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST, `cache ${id} is not registered on endpoint ${where.endpoint}`);
    const data = new Uint8Array(new SharedArrayBuffer(list.length * cache.blockBytes));
    const result = await this.#call({ op: 'kv-read', handle: where.handle, cacheId: id, blocks: list, data });
    return result.ret === LLM_STATUS.LLM_SUCCESS ? { ...result, data } : result;
  }

  /**
   * Pulls the peer's blocks into local blocks over the link to `remoteClusterId`.
   * @example const { ret, bytes } = await transfers.pullBlocks({ remoteClusterId: 7n, remoteCacheId: 1n, srcBlocks: [3, 8], dstCacheId: 2n, dstBlocks: [0, 1], timeoutMs: 1000 });
   */
  pullBlocks(request: PullRequest): Promise<TransferResult> {
    return this.#transfer('pull', request, {
      remoteCacheId: request.remoteCacheId,
      remoteBlocks: request.srcBlocks,
      remoteField: 'srcBlocks',
      localCacheId: request.dstCacheId,
      localBlocks: request.dstBlocks,
      localField: 'dstBlocks',
    });
  }

  /**
   * Pushes local blocks into the peer's blocks over the link to `remoteClusterId`.
   * @example await transfers.pushBlocks({ remoteClusterId: 7n, srcCacheId: 2n, srcBlocks: [0], remoteCacheId: 1n, dstBlocks: [5] });
   */
  pushBlocks(request: PushRequest): Promise<TransferResult> {
    return this.#transfer('push', request, {
      remoteCacheId: request.remoteCacheId,
      remoteBlocks: request.dstBlocks,
      remoteField: 'dstBlocks',
      localCacheId: request.srcCacheId,
      localBlocks: request.srcBlocks,
      localField: 'srcBlocks',
    });
  }

  /** Caches registered through this API and not unregistered since. */
  caches(): CacheInfo[] {
    return [...this.#caches.values()];
  }

  /**
   * The runtime's own view of every endpoint's links: which path transfers take, how many run.
   * @example (await transfers.links()).filter((l) => l.sameHost)
   */
  async links(): Promise<(RuntimeLink & { readonly endpoint: string })[]> {
    const lists = await Promise.all(
      [...this.#handles].map(async ([endpoint, handle]) => {
        const reply = await this.#listPool.run<RuntimeLink[]>({ op: 'list', handle });
        return reply.ok ? reply.value.map((l) => ({ ...l, endpoint })) : [];
      }),
    );
    return lists.flat();
  }

  /** Transfers in progress, oldest first, with their progress. */
  active(): ActiveTransfer[] {
    return [...this.#running.values()].map((t) => ({
      id: t.id,
      op: t.op,
      endpoint: t.endpoint,
      remoteClusterId: t.remoteClusterId,
      blocks: t.n,
      blocksDone: Atomics.load(t.control, CONTROL.done),
      inRuntime: Atomics.load(t.control, CONTROL.inRuntime) > 0,
      startedAt: t.startedAt,
    }));
  }

  /**
   * Refuses new calls, aborts running transfers and waits for them (each stops within one chunk).
   * @example await transfers.close();
   */
  async close(): Promise<void> {
    this.#closed = true;
    const running = [...this.#running.values()];
    for (const t of running) Atomics.store(t.control, CONTROL.abort, 1);
    await Promise.all(running.map((t) => t.done));
  }

  #endpoint(endpoint: string | undefined): { endpoint: string; handle: number } | ArgumentRefused {
    const name = endpoint ?? this.#defaultEndpoint;
    const handle = name === undefined ? undefined : this.#handles.get(name);
    if (name === undefined || handle === undefined) return new ArgumentRefused('endpoint', `unknown endpoint ${JSON.stringify(endpoint)}`);
    return { endpoint: name, handle };
  }

  async #call(task: Parameters<WorkerPool['run']>[0]): Promise<CallStatus> {
    if (this.#closed) return status(LLM_STATUS.LLM_FAILED, 'the transfer API is closed');
    const reply = await this.#pool.run<BlockReply>(task);
    if (!reply.ok) return status(reply.code, reply.message);
    return status(normalizeStatus(reply.value.rc), reply.value.message);
  }

  async #transfer(op: TransferOp, request: TransferCommon, sides: TransferSides): Promise<TransferResult> {
    const checked = this.#check(op, request, sides);
    if (!('handle' in checked)) return { ...checked, bytes: 0, blocks: 0, aborted: false };
    const running = this.#start(op, request, checked);
    try {
      const result = await running.done;
      const outcome = result.aborted ? 'aborted' : result.ret === LLM_STATUS.LLM_SUCCESS ? 'success' : 'failure';
      this.#metrics.observe(op, outcome, result.retName, result.bytes, result.blocks, (performance.now() - running.started) / 1000);
      return result;
    } finally {
      this.#running.delete(running.id);
    }
  }

  /** Every check a transfer passes on the main thread: endpoint, ids, timeout, lists, local cache. */
  #check(op: TransferOp, request: TransferCommon, sides: TransferSides): Checked | CallStatus {
    const { remoteCacheId, remoteBlocks, remoteField, localCacheId, localBlocks, localField } = sides;
    if (this.#closed) return status(LLM_STATUS.LLM_FAILED, 'the transfer API is closed');
    const where = this.#endpoint(request.endpoint);
    if (where instanceof ArgumentRefused) return refusal(where);
    const ids = [
      u64(request.remoteClusterId, 'remoteClusterId'),
      u64(remoteCacheId, 'remoteCacheId'),
      u64(localCacheId, op === 'pull' ? 'dstCacheId' : 'srcCacheId'),
    ];
    const bad = ids.find((x) => x instanceof ArgumentRefused);
    if (bad instanceof ArgumentRefused) return refusal(bad);
    const timeoutMs = timeoutArg(request.timeoutMs);
    if (timeoutMs instanceof ArgumentRefused) return refusal(timeoutMs);
    const paired = pairedLists(remoteBlocks, remoteField, localBlocks, localField);
    if (paired instanceof ArgumentRefused) return refusal(paired);
    const cache = this.#caches.get(cacheKey(where.endpoint, localCacheId));
    if (cache === undefined)
      return status(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST, `cache ${localCacheId} is not registered on endpoint ${where.endpoint}`);
    return { ...where, remoteCacheId, localCacheId, timeoutMs, lists: paired.lists, n: paired.n, blockBytes: cache.blockBytes };
  }

  /** Hands a checked transfer to the workers in slices and lists it as running. */
  #start(op: TransferOp, request: TransferCommon, checked: Checked): Running & { readonly started: number } {
    const settings = { pool: this.#pool, chunkBytes: this.#chunkBytes, sliceMs: this.#sliceMs, parallel: this.#parallel };
    const { running, started } = launchTransfer(this.#nextId++, op, request, checked, settings);
    this.#running.set(running.id, running);
    return { ...running, started };
  }
}

/** The two sides of a pull or a push: the peer's cache and blocks, ours, and the request fields naming each list. */
interface TransferSides {
  readonly remoteCacheId: bigint;
  readonly remoteBlocks: BlockList;
  readonly remoteField: string;
  readonly localCacheId: bigint;
  readonly localBlocks: BlockList;
  readonly localField: string;
}

function cacheKey(endpoint: string, cacheId: bigint): string {
  return `${endpoint}\u0000${cacheId}`;
}

function copyToShared(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(new SharedArrayBuffer(data.byteLength));
  out.set(data);
  return out;
}
