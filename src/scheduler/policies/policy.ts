/**
 * What a pair-selection policy is: a lazy preference order over a pool. The scheduler walks the
 * order and takes the first member the request fits on, so a policy never needs to know about
 * exclusions or block needs, and a pick costs only the members it actually looks at.
 */
import type { SchedulerNode } from '../node.ts';
import type { Pool } from '../pool.ts';
import type { PickReason, PolicyName } from '../types.ts';

/** Per-pick state shared between the scheduler and the policy. */
export interface PolicyContext {
  /** Uniform in [0, 1). */
  readonly rng: () => number;
  /** Chain hashes of the prompt's blocks (empty unless the prefill policy is cache_affinity). */
  readonly hashes: readonly number[];
  /** Whether the request may go to this member: not excluded, enough free blocks. */
  fits(node: SchedulerNode): boolean;
  /** Whether the caller excluded this member. */
  excluded(node: SchedulerNode): boolean;
  /** Set by the policy before each yield: why the member it yields is preferred. */
  reason: PickReason;
  /** Set by cache_affinity: prompt blocks the yielded member already holds. */
  matchedBlocks: number;
}

export interface Policy {
  readonly name: PolicyName;
  /**
   * Members in order of preference. May repeat a member (the caller skips repeats); the pool must
   * not change while the order is walked.
   */
  order(pool: Pool<SchedulerNode>, context: PolicyContext): Iterable<SchedulerNode>;
  /**
   * The member `order` yields first, with the context set as `order` sets it for that member,
   * without a generator: almost every pick takes the first P and its first D, and the walk's
   * generators and their scopes were most of what a pick allocated. Only a policy whose order
   * changes nothing (no cursor moved, no random draw) may have it: the scheduler walks `order`
   * after it when the first member does not fit.
   */
  first?(pool: Pool<SchedulerNode>, context: PolicyContext): SchedulerNode | undefined;
}
