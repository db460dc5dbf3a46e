/**
 * What a pair-selection policy is: a lazy preference order over a pool. The scheduler walks the
 * order and takes the first member the request fits on, so a policy never needs to know about
 * exclusions or block needs, and a pick costs only the members it actually looks at. A scheduler
 * makes its policies from their definitions, the entries of the policy table (table.ts).
 */
import type { KvHits } from '../kv-hits.ts';
import type { SchedulerNode } from '../node.ts';
import type { SchedulerOptions } from '../options.ts';
import type { Pool } from '../pool.ts';
import type { PrefixIndex } from '../prefix-index.ts';
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

/** The roles a policy can choose for. */
export type PolicyRole = 'prefill' | 'decode';

/**
 * What a policy may ask its scheduler to keep for it: `prefix_index`, pdlink's own record of which
 * P prefilled which prompt blocks (and the prompt's block hashes in `context.hashes`); `kv_hits`,
 * what the engines' KV events say each instance holds of the prompt of the pick in progress.
 */
export type PolicyNeed = 'prefix_index' | 'kv_hits';

/** What a scheduler gives a policy it makes. */
export interface PolicyBuild {
  /** The scheduler's member of an instance id (undefined when it has none). */
  readonly lookup: (id: number) => SchedulerNode | undefined;
  /** Kept when a policy of the scheduler needs `prefix_index` or `kv_hits`. */
  readonly prefix: PrefixIndex | undefined;
  /** Kept when a policy of the scheduler needs `kv_hits`; worked out before each pick's walk. */
  readonly hits: KvHits | undefined;
  /** `kv.loadWeight`: how much load weighs against the share of the prompt cached (precise_prefix). */
  readonly loadWeight: number;
  /** Everything the scheduler was created with (a gateway's policy may read fields of its own). */
  readonly options: SchedulerOptions;
}

/**
 * One entry of the policy table: a policy's name, where it applies, how it explains its choices,
 * what it needs kept, and how a scheduler makes it.
 * @example registerPolicy({ name: 'highest_id', roles: ['prefill', 'decode'], reasons: ['highest_id'], summary: '…', create: () => highestId });
 */
export interface PolicyDefinition {
  /** As `scheduler.policy.prefill` / `.decode` spell it: lowercase letters, digits and `_`. */
  readonly name: PolicyName;
  readonly roles: readonly PolicyRole[];
  /**
   * The reasons the policy sets in its context (`reason`), shown at 0 from the start under
   * `pdlink_pd_pair_selections_total{reason}`; a reason not listed still counts once it happens.
   */
  readonly reasons: readonly PickReason[];
  readonly needs?: readonly PolicyNeed[];
  /** One line for documentation and error messages. */
  readonly summary: string;
  create(build: PolicyBuild): Policy;
}
