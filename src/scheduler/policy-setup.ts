/**
 * The policies a scheduler walks, made once from its options through the policy table: the
 * prefill and decode policies by name, and what they need kept (the prefix index cache_affinity
 * reads, the KV hits precise_prefix reads, its load weight), and decode-first. Kept apart so the
 * scheduler itself is the walk and its bookkeeping.
 */
import { errors } from '../core/errors.ts';
import { KvState } from '../kv/kv-state.ts';
import { KvHits } from './kv-hits.ts';
import type { SchedulerNode } from './node.ts';
import type { SchedulerOptions } from './options.ts';
import { policyFor, type Policy, type PolicyNeed } from './policies/index.ts';
import { DEFAULT_LOAD_WEIGHT } from './policies/precise-prefix.ts';
import { PrefixIndex } from './prefix-index.ts';
import { DEFAULT_POLICY, type PolicyChoice } from './types.ts';

export interface PolicySetup {
  readonly choice: PolicyChoice;
  readonly prefill: Policy;
  readonly decode: Policy;
  /** How the prefill policy says it chose P (its definition's reasons). */
  readonly reasons: readonly string[];
  /** Kept when a policy needs `prefix_index` or `kv_hits` (for instances without KV events). */
  readonly prefix: PrefixIndex | undefined;
  /** Kept when a policy needs `kv_hits`: what the prompt of the pick in progress finds cached where. */
  readonly hits: KvHits | undefined;
  /** Whether a policy reads the prompt's approximate hashes in the walk (`prefix_index`: cache_affinity). */
  readonly walkHashes: boolean;
  readonly loadWeight: number;
  readonly decodeFirst: boolean;
}

/**
 * Makes the policies of a scheduler (DEFAULT_POLICY for a role the options do not name).
 * @throws PdlinkError `bad_request` naming `policy.prefill` / `policy.decode` (a name the table
 * lacks, or a policy of the other role) or `kv.loadWeight` (not a number ≥ 0).
 * @example const setup = setUpPolicies(options, (id) => topology.get(id));
 */
export function setUpPolicies(options: SchedulerOptions, lookup: (id: number) => SchedulerNode | undefined): PolicySetup {
  const prefillPolicy = policyFor(options.policy?.prefill ?? DEFAULT_POLICY, 'prefill', 'policy.prefill');
  const decodePolicy = policyFor(options.policy?.decode ?? DEFAULT_POLICY, 'decode', 'policy.decode');
  const needs = (need: PolicyNeed): boolean => prefillPolicy.needs?.includes(need) === true || decodePolicy.needs?.includes(need) === true;
  const loadWeight = options.kv?.loadWeight ?? DEFAULT_LOAD_WEIGHT;
  if (!Number.isFinite(loadWeight) || loadWeight < 0) throw errors.invalidArgument('kv.loadWeight', 'must be a number ≥ 0');
  const prefix = needs('prefix_index') || needs('kv_hits') ? new PrefixIndex(options.prefix) : undefined;
  const hits = needs('kv_hits') ? new KvHits(options.kv?.state ?? new KvState(), prefix!) : undefined;
  const build = { lookup, prefix, hits, loadWeight, options };
  return {
    choice: Object.freeze({ prefill: prefillPolicy.name, decode: decodePolicy.name }),
    prefill: prefillPolicy.create(build),
    decode: decodePolicy.create(build),
    reasons: prefillPolicy.reasons,
    prefix,
    hits,
    walkHashes: needs('prefix_index'),
    loadWeight,
    decodeFirst: hits !== undefined && options.kv?.decodeFirst === true,
  };
}
