/**
 * The scheduler's public shapes: policy names (as `scheduler.policy` names them in configuration),
 * the request it places, and what it answers.
 */
import type { Instance } from '../cluster/instance.ts';
import type { PdPath } from './pd-path.ts';

/** A policy's name as `scheduler.policy` spells it: a built-in one or a gateway's (policies/table.ts). */
export type PolicyName = string;

export const DEFAULT_POLICY: PolicyName = 'load_balance';

/**
 * The Coordinator's prefill policy when its file names none: cache_affinity, which gave 2.5× the
 * goodput of round_robin on Mooncake's synthetic trace (bench/results/policies.md). A scheduler made
 * directly with createScheduler() keeps DEFAULT_POLICY.
 */
export const DEFAULT_PREFILL_POLICY: PolicyName = 'cache_affinity';

export interface PolicyChoice {
  readonly prefill: PolicyName;
  readonly decode: PolicyName;
}

/** One request to place on a (P, D) pair. */
export interface PickRequest {
  /** Prompt token ids; used for cache affinity and, without `promptBlocks`, for the blocks it needs. */
  readonly promptTokens?: readonly number[];
  /** Prompt text, hashed as UTF-8 bytes when there are no token ids (cache affinity only). */
  readonly promptText?: string;
  /** KV blocks the prompt needs on P and on D; without it, ⌈tokens / block_size⌉ per instance, or 0. */
  readonly promptBlocks?: number;
  /** Prompt length in tokens (may be an estimate), for conditional disaggregation. */
  readonly promptTokenCount?: number;
  /** Instances not to use, e.g. the ones a retry already failed on. */
  readonly excludeP?: ReadonlySet<number>;
  readonly excludeD?: ReadonlySet<number>;
}

/** How P was chosen, in its policy's words (each definition lists its reasons). */
export type PickReason = string;

/** A placed request. */
export interface Pair {
  readonly ok: true;
  readonly p: Instance;
  readonly d: Instance;
  readonly policy: PolicyChoice;
  readonly reason: PickReason;
  /** Prompt blocks P already holds (cache affinity; 0 otherwise). */
  readonly matchedBlocks: number;
  /** `local`: D prefills the prompt itself, no P leg (conditional disaggregation, pd-path.ts). */
  readonly path?: PdPath;
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
