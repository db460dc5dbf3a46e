/**
 * The engine simulator's KV runtime in a real process: the embedded instance agent's transfer API
 * (block caches on the device contexts, writes, reads and pulls through the worker pool) and its
 * link manager (which local device holds the link to a prefiller's cluster id).
 */
import type { LinkManager } from '../../../links/manager.ts';
import type { PullResult, PullSpec, SimKv } from './kv-port.ts';

interface Status {
  readonly ret: number;
  readonly retName: string;
  readonly message?: string;
}

/** The part of the agent's transfer API (src/instance/transfers.ts) the simulator calls. */
export interface AgentTransferApi {
  registerCache(endpoint: string | undefined, spec: { cacheId: bigint; numBlocks: number; blockBytes: number }): Promise<Status>;
  writeBlocks(endpoint: string | undefined, cacheId: bigint, blocks: Uint32Array, data: Uint8Array): Promise<Status>;
  readBlocks(endpoint: string | undefined, cacheId: bigint, blocks: Uint32Array): Promise<Status & { readonly data?: Uint8Array }>;
  pullBlocks(request: {
    endpoint?: string;
    remoteClusterId: bigint;
    remoteCacheId: bigint;
    srcBlocks: Uint32Array;
    dstCacheId: bigint;
    dstBlocks: Uint32Array;
    timeoutMs?: number;
    signal?: AbortSignal;
  }): Promise<Status & { readonly bytes: number }>;
}

/**
 * A SimKv over an agent's transfer API and link manager; runtime failures of local calls throw
 * (they are engine bugs, answered 500), a failed pull comes back as its status code.
 * @example const kv = agentKv(agent.transfers, agent.linkManager);
 */
export function agentKv(transfers: AgentTransferApi, links: LinkManager): SimKv {
  const check = (what: string, status: Status): void => {
    if (status.ret !== 0) throw new Error(`${what} failed: ${status.retName}${status.message === undefined ? '' : ` (${status.message})`}`);
  };
  return {
    async register(endpoint, cacheId, numBlocks, blockBytes) {
      check(
        `registering KV cache ${cacheId} on device ${endpoint}`,
        await transfers.registerCache(endpoint, { cacheId, numBlocks, blockBytes }),
      );
    },
    async write(endpoint, cacheId, blocks, data) {
      check(`writing ${blocks.length} KV blocks on device ${endpoint}`, await transfers.writeBlocks(endpoint, cacheId, blocks, data));
    },
    async read(endpoint, cacheId, blocks) {
      const result = await transfers.readBlocks(endpoint, cacheId, blocks);
      check(`reading ${blocks.length} KV blocks on device ${endpoint}`, result);
      if (result.data === undefined) throw new Error(`reading ${blocks.length} KV blocks on device ${endpoint} returned no data`);
      return result.data;
    },
    async pull(spec: PullSpec): Promise<PullResult> {
      const result = await transfers.pullBlocks({
        endpoint: spec.endpoint,
        remoteClusterId: spec.remoteClusterId,
        remoteCacheId: spec.remoteCacheId,
        srcBlocks: spec.srcBlocks,
        dstCacheId: spec.dstCacheId,
        dstBlocks: spec.dstBlocks,
        timeoutMs: spec.timeoutMs,
        ...(spec.signal === undefined ? {} : { signal: spec.signal }),
      });
      return {
        ret: result.ret,
        retName: result.message === undefined ? result.retName : `${result.retName} (${result.message})`,
        bytes: result.bytes,
      };
    },
    linkedEndpoint(remoteClusterId) {
      for (const link of links.list()) {
        if (link.remoteClusterId === remoteClusterId && link.state === 'linked') return link.endpoint;
      }
      return undefined;
    },
  };
}
