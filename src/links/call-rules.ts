/**
 * The rules of an LLM-DataDist link or unlink call that hold before and after the runtime is asked:
 * the per-call cluster limit and defaults, the checks that fail a whole call up front, and which answers
 * settle what the runtime holds. They live apart from the manager so its state machine reads alone.
 */
import { INT32_MAX } from '../core/limits.ts';
import type { Registry } from '../core/metrics.ts';
import type { IpPort } from './endpoint.ts';
import { LLM_STATUS } from '../core/llm-status.ts';
import type { LinkExecutor } from './types.ts';

/** LLM-DataDist's limit of clusters per link/unlink call. */
export const MAX_CLUSTERS_PER_CALL = 16;
/** Default timeout of link/unlink calls (LLM-DataDist's Python default). */
export const DEFAULT_TIMEOUT_MS = 3000;
/**
 * Default coalescing window. With callers arriving one per event-loop turn (as HTTP requests do),
 * 1 ms nearly tripled throughput over 0 ms and 2 ms did no better (bench/results/pool.md).
 */
export const DEFAULT_BATCH_WINDOW_MS = 1;

export interface LinkManagerOptions {
  readonly executor: LinkExecutor;
  /** Local endpoint names (one per device); the first is the default. */
  readonly endpoints: readonly string[];
  /** Clusters per runtime call, 1..16 (default 16). */
  readonly maxBatch?: number;
  readonly batchWindowMs?: number;
  /**
   * Runtime calls the executor runs at once (its threads; default 1): clusters that leave together
   * while fewer calls are out are split evenly over the idle ones.
   */
  readonly parallelCalls?: number;
  readonly registry?: Registry;
  /** Wall clock in epoch ms (default Date.now): entry times, and call starts compared with the runtime's event stamps. */
  readonly now?: () => number;
  /** Local address an endpoint links from when a target names none (its device address, port 0). */
  readonly localAddresses?: ReadonlyMap<string, IpPort>;
}

export interface LinkOptions {
  readonly timeoutMs?: number;
}

export interface UnlinkOptions extends LinkOptions {
  readonly force?: boolean;
}

/** Link answers after which the runtime's holding of the link is known (linked, or nothing held). */
export const LINK_SETTLED: ReadonlySet<number> = new Set([LLM_STATUS.LLM_SUCCESS, LLM_STATUS.LLM_ALREADY_LINK]);
/** Unlink answers after which the runtime holds nothing for that cluster. */
export const UNLINK_SETTLED: ReadonlySet<number> = new Set([
  LLM_STATUS.LLM_SUCCESS,
  LLM_STATUS.LLM_NOT_YET_LINK,
  LLM_STATUS.LLM_NOTIFY_PROMPT_UNLINK_FAILED,
]);

/** The code that fails a whole call before any cluster is tried, as LLM-DataDist checks them. */
export function callError(count: number, timeoutMs: number | undefined): number | undefined {
  if (count > MAX_CLUSTERS_PER_CALL) return LLM_STATUS.LLM_CLUSTER_NUM_EXCEED_LIMIT;
  if (count === 0) return LLM_STATUS.LLM_PARAM_INVALID;
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > INT32_MAX))
    return LLM_STATUS.LLM_PARAM_INVALID;
  return undefined;
}
