/**
 * The instance agent's transfer side: a worker pool of its own (bulk copies never delay a link or
 * unlink call waiting in the link pool), the same-host path setting of every context, and the
 * transfer API over them.
 */
import { errors } from '../../core/errors.ts';
import type { Registry } from '../../core/metrics.ts';
import type { BlockReply } from '../../workers/block-protocol.ts';
import { DEFAULT_POOL_THREADS, WorkerPool } from '../../workers/pool.ts';
import { Transfers } from './transfers.ts';

/** Turns the same-host shared-memory path off when "0", "false" or "off" (an operator forcing TCP). */
export const SAME_HOST_FASTPATH_ENV = 'PDLINK_SAME_HOST_FASTPATH';

export interface TransferSettings {
  /** Worker threads for transfers (default: as many as the link pool). */
  readonly threads?: number;
  /**
   * Same-host peers copy through shared memory (default true, or env PDLINK_SAME_HOST_FASTPATH);
   * false makes every link carry its transfers over TCP. Applies to links made afterwards.
   */
  readonly sameHostFastpath?: boolean;
  /** Bytes per runtime call of a transfer (default 16 MiB). */
  readonly chunkBytes?: number;
  /** Time a transfer holds a worker before queueing again (default 50 ms). */
  readonly sliceMs?: number;
  /** Slices of one transfer running at once on different workers (default 2). */
  readonly parallelSlices?: number;
}

export interface AgentTransfers {
  readonly transfers: Transfers;
  /** Aborts running transfers, waits for them, stops the transfer workers. */
  close(): Promise<void>;
}

/**
 * Starts the transfer pool and API on the agent's contexts; rejects (pool closed) if a context
 * refuses the same-host setting.
 * @example const kv = await startTransfers(handles, { sameHostFastpath: false }, { registry });
 */
export async function startTransfers(
  handles: ReadonlyMap<string, number>,
  settings: TransferSettings = {},
  context: {
    readonly registry?: Registry;
    readonly filename?: string | URL;
    readonly env?: Record<string, string | undefined>;
    readonly listPool?: WorkerPool;
  } = {},
): Promise<AgentTransfers> {
  const pool = new WorkerPool({
    threads: settings.threads ?? DEFAULT_POOL_THREADS,
    ...(context.filename === undefined ? {} : { filename: context.filename }),
  });
  const fastpath = settings.sameHostFastpath ?? fastpathFromEnv(context.env ?? process.env);
  if (!fastpath) {
    for (const [endpoint, handle] of handles) {
      const reply = await pool.run<BlockReply>({ op: 'kv-fastpath', handle, enabled: false });
      const why = !reply.ok ? reply.message : reply.value.rc !== 0 ? (reply.value.message ?? `status ${reply.value.rc}`) : undefined;
      if (why !== undefined) {
        await pool.close();
        throw errors.unavailable(`cannot turn the same-host path off on endpoint ${endpoint}: ${why}`);
      }
    }
  }
  let transfers: Transfers;
  try {
    transfers = new Transfers({
      pool,
      handles,
      ...(context.registry === undefined ? {} : { registry: context.registry }),
      ...(context.listPool === undefined ? {} : { listPool: context.listPool }),
      ...(settings.chunkBytes === undefined ? {} : { chunkBytes: settings.chunkBytes }),
      ...(settings.sliceMs === undefined ? {} : { sliceMs: settings.sliceMs }),
      ...(settings.parallelSlices === undefined ? {} : { parallelSlices: settings.parallelSlices }),
    });
  } catch (err) {
    await pool.close();
    throw err;
  }
  return {
    transfers,
    async close() {
      await transfers.close();
      await pool.close();
    },
  };
}

function fastpathFromEnv(env: Record<string, string | undefined>): boolean {
  const value = env[SAME_HOST_FASTPATH_ENV]?.trim().toLowerCase();
  return !(value === '0' || value === 'false' || value === 'off');
}
