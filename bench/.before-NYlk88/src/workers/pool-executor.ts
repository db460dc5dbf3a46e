/**
 * The production LinkExecutor: sends each link/unlink batch to the worker pool as one task on the
 * endpoint's runtime context, and maps any worker failure to per-cluster codes.
 */
import { LLM_STATUS } from '../core/llm-status.ts';
import type { BatchOutcome, ClusterTarget, LinkExecutor } from '../links/types.ts';
import { encodeClusters, sharedRets } from './encoding.ts';
import type { WorkerPool } from './pool.ts';
import type { Encoding, LinkReply, WorkerCluster } from './protocol.ts';

/**
 * Default batch encoding. Sixteen clusters are a few hundred bytes: structured clone, msgpackr and
 * shared records came out within noise of each other (bench/results/pool.md), and clone led at the
 * best setting while needing nothing of the receiver.
 */
export const DEFAULT_ENCODING: Encoding = 'clone';

export interface PoolExecutorOptions {
  readonly pool: WorkerPool;
  /** Runtime context handle of each local endpoint. */
  readonly handles: ReadonlyMap<string, number>;
  readonly encoding?: Encoding;
}

export class PoolLinkExecutor implements LinkExecutor {
  readonly #pool: WorkerPool;
  readonly #handles: ReadonlyMap<string, number>;
  readonly #encoding: Encoding;

  constructor(options: PoolExecutorOptions) {
    this.#pool = options.pool;
    this.#handles = options.handles;
    this.#encoding = options.encoding ?? DEFAULT_ENCODING;
  }

  /**
   * Links a batch of ≤ 16 clusters on `endpoint`'s context.
   * @example const { rets } = await executor.link('0', [{ remoteClusterId: 7n, remote: { ip: '127.0.0.2', port: 26000 } }], 3000);
   */
  link(endpoint: string, clusters: readonly ClusterTarget[], timeoutMs: number): Promise<BatchOutcome> {
    return this.#run('link', endpoint, clusters, timeoutMs, false);
  }

  unlink(endpoint: string, clusters: readonly ClusterTarget[], timeoutMs: number, force: boolean): Promise<BatchOutcome> {
    return this.#run('unlink', endpoint, clusters, timeoutMs, force);
  }

  async #run(
    op: 'link' | 'unlink',
    endpoint: string,
    clusters: readonly ClusterTarget[],
    timeoutMs: number,
    force: boolean,
  ): Promise<BatchOutcome> {
    const handle = this.#handles.get(endpoint);
    if (handle === undefined) return { rets: clusters.map(() => LLM_STATUS.LLM_PARAM_INVALID), message: `unknown endpoint ${endpoint}` };
    const { batch, transfer } = encodeClusters(this.#encoding, clusters.map(toWorkerCluster));
    const reply = await this.#pool.run<LinkReply>({ op, handle, timeoutMs, deadline: Date.now() + timeoutMs, force, batch }, { transfer });
    if (!reply.ok) {
      // The worker died or the task was aborted mid-call: the runtime may hold partial state.
      return { rets: clusters.map(() => reply.code), indeterminate: true, message: reply.message };
    }
    const holders = reply.value.holders === undefined ? {} : { holders: reply.value.holders };
    if (batch.enc === 'shared') return { rets: Array.from(sharedRets(batch.buffer, batch.n)), ...holders };
    return { rets: reply.value.rets, ...holders };
  }
}

function toWorkerCluster(target: ClusterTarget): WorkerCluster {
  return {
    id: target.remoteClusterId,
    ip: target.remote.ip,
    port: target.remote.port,
    localIp: target.local?.ip ?? '',
    localPort: target.local?.port ?? 0,
  };
}
