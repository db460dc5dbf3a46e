/**
 * What the engine simulator needs from a KV runtime: register a block cache per device, write and
 * read local blocks, pull a peer's blocks over a link, and find the local device linked to a peer.
 * In a `pdlink sim-engine` process this is the embedded instance agent (src/sim/engine/kv/agent-kv.ts); unit
 * tests use the in-memory fabric below, which keeps the same rules (a pull needs a link, unknown
 * blocks are KV_CACHE_NOT_EXIST) without native code.
 */
import { LLM_STATUS, statusName } from '../../../core/llm-status.ts';

/** The one cache id every simulated engine registers on each device (P's and D's agree on it). */
export const SIM_CACHE_ID = 1n;

export interface PullSpec {
  /** Local device (link manager endpoint) that holds the link and receives the blocks. */
  readonly endpoint: string;
  readonly remoteClusterId: bigint;
  readonly remoteCacheId: bigint;
  readonly srcBlocks: Uint32Array;
  readonly dstCacheId: bigint;
  readonly dstBlocks: Uint32Array;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** A transfer's outcome as data, the way LLM-DataDist reports it. */
export interface PullResult {
  readonly ret: number;
  readonly retName: string;
  readonly bytes: number;
}

export interface SimKv {
  register(endpoint: string, cacheId: bigint, numBlocks: number, blockBytes: number): Promise<void>;
  write(endpoint: string, cacheId: bigint, blocks: Uint32Array, data: Uint8Array): Promise<void>;
  read(endpoint: string, cacheId: bigint, blocks: Uint32Array, blockBytes: number): Promise<Uint8Array>;
  pull(spec: PullSpec): Promise<PullResult>;
  /** The local endpoint holding a usable link to `remoteClusterId`, if any. */
  linkedEndpoint(remoteClusterId: bigint): string | undefined;
}

interface MemoryCache {
  readonly blockBytes: number;
  readonly data: Uint8Array;
  readonly numBlocks: number;
}

/**
 * In-memory KV runtime for unit tests: every engine of one fabric sees the others' caches, and a
 * pull succeeds only between endpoints joined with `link`.
 * @example const fabric = new MemoryFabric(); const p = fabric.kv([{ endpoint: '0', clusterId: 1n }]);
 */
export class MemoryFabric {
  readonly #caches = new Map<string, MemoryCache>();
  readonly #links = new Set<string>();
  readonly #owner = new Map<bigint, string>();

  /**
   * A SimKv for an engine whose devices have these endpoints and cluster ids.
   * @example const kv = fabric.kv([{ endpoint: '0', clusterId: 7n }]);
   */
  kv(devices: readonly { endpoint: string; clusterId: bigint }[]): SimKv {
    const byEndpoint = new Map(devices.map((d) => [d.endpoint, d.clusterId]));
    for (const d of devices) this.#owner.set(d.clusterId, d.endpoint);
    const cluster = (endpoint: string): bigint => {
      const id = byEndpoint.get(endpoint);
      if (id === undefined) throw new Error(`unknown endpoint ${endpoint}`);
      return id;
    };
    return {
      register: async (endpoint, cacheId, numBlocks, blockBytes) => {
        this.#caches.set(key(cluster(endpoint), cacheId), { blockBytes, numBlocks, data: new Uint8Array(numBlocks * blockBytes) });
      },
      write: async (endpoint, cacheId, blocks, data) => {
        const cache = this.#cache(cluster(endpoint), cacheId);
        blocks.forEach((b, i) => cache.data.set(data.subarray(i * cache.blockBytes, (i + 1) * cache.blockBytes), b * cache.blockBytes));
      },
      read: async (endpoint, cacheId, blocks) => {
        const cache = this.#cache(cluster(endpoint), cacheId);
        const out = new Uint8Array(blocks.length * cache.blockBytes);
        blocks.forEach((b, i) => out.set(cache.data.subarray(b * cache.blockBytes, (b + 1) * cache.blockBytes), i * cache.blockBytes));
        return out;
      },
      pull: async (spec) => {
        const local = cluster(spec.endpoint);
        if (!this.#links.has(linkKey(local, spec.remoteClusterId))) return result(LLM_STATUS.LLM_NOT_YET_LINK, 0);
        const src = this.#caches.get(key(spec.remoteClusterId, spec.remoteCacheId));
        const dst = this.#caches.get(key(local, spec.dstCacheId));
        if (src === undefined || dst === undefined) return result(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST, 0);
        if ([...spec.srcBlocks].some((b) => b >= src.numBlocks) || [...spec.dstBlocks].some((b) => b >= dst.numBlocks)) {
          return result(LLM_STATUS.LLM_KV_CACHE_NOT_EXIST, 0);
        }
        spec.srcBlocks.forEach((b, i) => {
          dst.data.set(src.data.subarray(b * src.blockBytes, (b + 1) * src.blockBytes), spec.dstBlocks[i]! * dst.blockBytes);
        });
        return result(LLM_STATUS.LLM_SUCCESS, spec.srcBlocks.length * src.blockBytes);
      },
      linkedEndpoint: (remoteClusterId) => {
        for (const [endpoint, id] of byEndpoint) if (this.#links.has(linkKey(id, remoteClusterId))) return endpoint;
        return undefined;
      },
    };
  }

  /**
   * Joins two cluster ids with a link (both directions).
   * @example fabric.link(1n, 2n)
   */
  link(a: bigint, b: bigint): void {
    this.#links.add(linkKey(a, b));
    this.#links.add(linkKey(b, a));
  }

  /**
   * Overwrites one byte of a cache, to show that corruption is caught.
   * @example fabric.poke(1n, SIM_CACHE_ID, 0, 5, 0xff)
   */
  poke(clusterId: bigint, cacheId: bigint, block: number, offset: number, value: number): void {
    const cache = this.#cache(clusterId, cacheId);
    cache.data[block * cache.blockBytes + offset] = value;
  }

  #cache(clusterId: bigint, cacheId: bigint): MemoryCache {
    const cache = this.#caches.get(key(clusterId, cacheId));
    if (cache === undefined) throw new Error(`cache ${cacheId} of cluster ${clusterId} is not registered`);
    return cache;
  }
}

function key(clusterId: bigint, cacheId: bigint): string {
  return `${clusterId}/${cacheId}`;
}

function linkKey(local: bigint, remote: bigint): string {
  return `${local}->${remote}`;
}

function result(ret: number, bytes: number): PullResult {
  return { ret, retName: statusName(ret), bytes };
}
