/**
 * The policies a scheduler walks, made once from its options: the prefill and decode policies by
 * name, the prefix index cache_affinity and precise_prefix read, and what precise_prefix needs (the
 * KV hits of the pick in progress, its load weight, decode-first). Kept apart so the scheduler
 * itself is the walk and its bookkeeping.
 */
import { errors } from '../core/errors.ts';
import { KvState } from '../kv/kv-state.ts';
import { KvHits } from './kv-hits.ts';
import type { SchedulerNode } from './node.ts';
import type { SchedulerOptions } from './options.ts';
import { cacheAffinity, loadBalance, type Policy, powerOfTwo, roundRobin } from './policies/index.ts';
import { DEFAULT_LOAD_WEIGHT, precisePrefix } from './policies/precise-prefix.ts';
import { PrefixIndex } from './prefix-index.ts';
import type { DecodePolicyName, PolicyChoice } from './types.ts';

export interface PolicySetup {
  readonly prefill: Policy;
  readonly decode: Policy;
  /** Made for cache_affinity and precise_prefix (for instances without KV events). */
  readonly prefix: PrefixIndex | undefined;
  /** Made for precise_prefix: what the prompt of the pick in progress finds cached where. */
  readonly hits: KvHits | undefined;
  readonly loadWeight: number;
  readonly decodeFirst: boolean;
}

/**
 * Makes the policies of a scheduler.
 * @throws PdlinkError `bad_request` naming `kv.loadWeight` when it is not a number ≥ 0.
 * @example const setup = setUpPolicies(policy, options, (id) => topology.get(id));
 */
export function setUpPolicies(
  choice: PolicyChoice,
  options: SchedulerOptions,
  lookup: (id: number) => SchedulerNode | undefined,
): PolicySetup {
  const { prefill, decode } = choice;
  const precise = prefill === 'precise_prefix' || decode === 'precise_prefix';
  const prefix = prefill === 'cache_affinity' || precise ? new PrefixIndex(options.prefix) : undefined;
  const hits = precise ? new KvHits(options.kv?.state ?? new KvState(), prefix!) : undefined;
  const loadWeight = options.kv?.loadWeight ?? DEFAULT_LOAD_WEIGHT;
  if (!Number.isFinite(loadWeight) || loadWeight < 0) throw errors.invalidArgument('kv.loadWeight', 'must be a number ≥ 0');
  const precisePolicy = hits === undefined ? undefined : precisePrefix(hits, lookup, loadWeight);
  return {
    prefill:
      prefill === 'precise_prefix'
        ? precisePolicy!
        : prefill === 'cache_affinity'
          ? cacheAffinity(prefix!, lookup)
          : SIMPLE_POLICIES[prefill as SimplePolicyName],
    decode: decode === 'precise_prefix' ? precisePolicy! : SIMPLE_POLICIES[decode as SimplePolicyName],
    prefix,
    hits,
    loadWeight,
    decodeFirst: precise && options.kv?.decodeFirst === true,
  };
}

type SimplePolicyName = Exclude<DecodePolicyName, 'precise_prefix'>;

const SIMPLE_POLICIES: Record<SimplePolicyName, Policy> = {
  load_balance: loadBalance,
  round_robin: roundRobin,
  power_of_two: powerOfTwo,
};
