/**
 * What a scheduler is made from, and the checks its constructor runs on it. An embedding gateway
 * may build a scheduler from plain JavaScript, so each option is checked at run time and a bad one
 * is named by its field, with the same wording as the Coordinator's configuration file.
 */
import type { ClusterView } from '../cluster/instance.ts';
import { errors } from '../core/errors.ts';
import type { Registry } from '../core/metrics.ts';
import type { CircuitBreakers } from './breakers.ts';
import type { LoadSource } from './loads.ts';
import type { KvState } from '../kv/kv-state.ts';
import type { LocalPrefillRule } from './pd-path.ts';
import { DEFAULT_BLOCK_SIZE } from './prefix-hash.ts';
import type { PrefixIndexOptions } from './prefix-index.ts';
import type { PolicyName } from './types.ts';

export interface SchedulerOptions {
  /** Topology (the cluster registry). */
  cluster: ClusterView;
  /** Live reservations (the KV ledger, via `ledgerLoads`); default: none, reported values only. */
  loads?: LoadSource;
  /** Circuit breakers the proxy reports outcomes to; default: a fresh set with default thresholds. */
  health?: CircuitBreakers;
  /** Policy per role (`scheduler.policy`); default load_balance for both. */
  policy?: { readonly prefill?: PolicyName; readonly decode?: PolicyName };
  /** Tokens per prefix-hash block for cache_affinity (default 128); the same for every instance so hashes compare. */
  blockSize?: number;
  /** Memory bounds of the cache_affinity prefix index. */
  prefix?: PrefixIndexOptions;
  /** Uniform in [0, 1) for power_of_two (default Math.random); inject a seeded one in tests. */
  rng?: () => number;
  /** Registry for the scheduler's metrics (default: none). */
  metrics?: Registry;
  /** Requests this process may hold on one instance (`request_limit.single_node_max_requests`); default no cap. */
  maxRequestsPerInstance?: number;
  /** Conditional disaggregation (`scheduler.conditional_disaggregation`); default off. */
  localPrefill?: LocalPrefillRule;
  /** What precise_prefix reads: the engines' KV state, its load weight, and decode-first. */
  kv?: PreciseRouting;
}

/** precise_prefix's inputs (`scheduler.precise_prefix`, `scheduler.kv_events`, `conditional_disaggregation.decode_first`). */
export interface PreciseRouting {
  /** The index the engines' KV events feed (default: an empty one, so only pdlink's own record counts). */
  readonly state?: KvState;
  /** Weight of load against the share of the prompt cached (default 1). */
  readonly loadWeight?: number;
  /**
   * Choose D first: D prefills locally when it holds all but `localPrefill.maxLocalPrefillLength`
   * tokens of the prompt, or when no P can take the request.
   */
  readonly decodeFirst?: boolean;
}

/** Largest prefix-hash block, in tokens. */
export const MAX_BLOCK_SIZE = 4096;

/**
 * Returns the block size (DEFAULT_BLOCK_SIZE when absent) if it is an integer in [1, MAX_BLOCK_SIZE].
 * @example blockSizeArg(options.blockSize) // 128
 */
export function blockSizeArg(value: number | undefined): number {
  if (value === undefined) return DEFAULT_BLOCK_SIZE;
  if (!Number.isSafeInteger(value) || value < 1 || value > MAX_BLOCK_SIZE) {
    throw errors.invalidArgument('blockSize', `must be an integer in [1, ${MAX_BLOCK_SIZE}]`);
  }
  return value;
}
