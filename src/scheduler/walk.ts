/**
 * The state of one pick's walk over the policies' orders: what a policy asks of a member (does the
 * request fit it, did the caller exclude it), and what the walk met and chose.
 */
import type { SchedulerNode } from './node.ts';
import type { PolicyContext } from './policies/index.ts';
import { blocksNeeded, type CheckedRequest } from './request.ts';
import type { PickReason } from './types.ts';

/**
 * One side of a pick's walk, as its policy sees it: whether a member may take the request (not
 * excluded, room for the prompt's blocks), what the policy said of the member it offered, and, on
 * the P side, what the walk met (the D side reports there too) and the pair it chose. One object
 * per side with its methods on the prototype: a closure each was most of a pick's garbage.
 * @example const pWalk = new PairWalk(rng, hashes, checked, checked.excludeP, undefined);
 */
export class PairWalk implements PolicyContext {
  reason: PickReason = 'least_load';
  matchedBlocks = 0;
  /** Some member was passed over because the request excluded it. */
  excludedAny = false;
  /** Some member was passed over for too few free blocks. */
  lackedRoom = false;
  p: SchedulerNode | undefined = undefined;
  d: SchedulerNode | undefined = undefined;
  pickedReason: PickReason = 'least_load';
  pickedBlocks = 0;
  readonly #report: PairWalk;

  constructor(
    readonly rng: () => number,
    readonly hashes: readonly number[],
    readonly request: CheckedRequest,
    readonly exclude: ReadonlySet<number>,
    /** The P side's walk, which hears what the D side met; undefined for the P side itself. */
    report: PairWalk | undefined,
  ) {
    this.#report = report ?? this;
  }

  fits(node: SchedulerNode): boolean {
    if (this.exclude.has(node.id)) {
      this.#report.excludedAny = true;
      return false;
    }
    if (node.freeBlocks < blocksNeeded(this.request, node.instance)) {
      this.#report.lackedRoom = true;
      return false;
    }
    return true;
  }

  excluded(node: SchedulerNode): boolean {
    return this.exclude.has(node.id);
  }

  /** The pair chosen, with what the policy said of P when it offered it. */
  chose(p: SchedulerNode, d: SchedulerNode): this {
    this.p = p;
    this.d = d;
    this.pickedReason = this.reason;
    this.pickedBlocks = this.matchedBlocks;
    return this;
  }
}

/**
 * The context of a walk over D's alone (another D for a P that already answered): a member fits
 * when the caller did not exclude it; the walk checks the blocks itself.
 * @example for (const d of policy.order(p.decodes, decodeOnlyContext(rng, excludeD))) ...
 */
export function decodeOnlyContext(rng: () => number, exclude: ReadonlySet<number>): PolicyContext {
  return {
    rng,
    hashes: NO_HASHES,
    fits: (node) => !exclude.has(node.id),
    excluded: (node) => exclude.has(node.id),
    reason: 'least_load',
    matchedBlocks: 0,
  };
}

/** No prompt hashes: the D side never matches prefixes, nor does any policy but cache_affinity. */
export const NO_HASHES: readonly number[] = Object.freeze([]);
