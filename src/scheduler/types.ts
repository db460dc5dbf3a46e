/**
 * The scheduler's public shapes: policy names (as `scheduler.policy` names them in configuration),
 * the request it places, and what it answers.
 */
import * as v from 'valibot';
import type { Instance } from '../cluster/instance.ts';

/** Every pair-selection policy; `cache_affinity` applies to prefill only. */
export const POLICY_NAMES = ['load_balance', 'round_robin', 'power_of_two', 'cache_affinity'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];
/** Policies a decode instance can be chosen by: its KV arrives from P, so it has no prefix cache to aim at. */
export const DECODE_POLICY_NAMES = ['load_balance', 'round_robin', 'power_of_two'] as const;
export type DecodePolicyName = (typeof DECODE_POLICY_NAMES)[number];

export const DEFAULT_POLICY: PolicyName = 'load_balance';

/** Configuration schema of one role's policy, for `scheduler.policy.prefill` / `.decode`. */
export const PrefillPolicySchema = v.picklist(POLICY_NAMES, `must be one of ${POLICY_NAMES.join(', ')}`);
export const DecodePolicySchema = v.picklist(DECODE_POLICY_NAMES, `must be one of ${DECODE_POLICY_NAMES.join(', ')}`);

export interface PolicyChoice {
  readonly prefill: PolicyName;
  readonly decode: DecodePolicyName;
}

/** One request to place on a (P, D) pair. */
export interface PickRequest {
  /** Prompt token ids; used for cache affinity and, without `promptBlocks`, for the blocks it needs. */
  readonly promptTokens?: readonly number[];
  /** Prompt text, hashed as UTF-8 bytes when there are no token ids (cache affinity only). */
  readonly promptText?: string;
  /** KV blocks the prompt needs on P and on D; without it, ⌈tokens / block_size⌉ per instance, or 0. */
  readonly promptBlocks?: number;
  /** Instances not to use, e.g. the ones a retry already failed on. */
  readonly excludeP?: ReadonlySet<number>;
  readonly excludeD?: ReadonlySet<number>;
}

/** How P was chosen. */
export const PICK_REASONS = ['least_load', 'round_robin', 'power_of_two', 'cache_hit', 'cache_miss', 'cache_overloaded'] as const;
export type PickReason = (typeof PICK_REASONS)[number];

/** A placed request. */
export interface Pair {
  readonly ok: true;
  readonly p: Instance;
  readonly d: Instance;
  readonly policy: PolicyChoice;
  readonly reason: PickReason;
  /** Prompt blocks P already holds (cache affinity; 0 otherwise). */
  readonly matchedBlocks: number;
}

/** Why no pair could be chosen, from the most to the least fundamental. */
export const PICK_FAILURES = [
  'no_prefill',
  'no_decode',
  'no_linked_decode',
  'no_healthy_prefill',
  'no_healthy_decode',
  'no_capacity',
  'excluded',
  'instance_cap',
] as const;
export type PickFailureReason = (typeof PICK_FAILURES)[number];

export interface PickFailure {
  readonly ok: false;
  readonly reason: PickFailureReason;
  /** One sentence naming why, fit for a 503 body. */
  readonly message: string;
}

export type PickResult = Pair | PickFailure;
