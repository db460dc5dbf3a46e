/**
 * `cache_affinity` (prefill only): prefer the P that already holds the longest prefix of the
 * prompt, by block chain hashes, so its prefix cache saves the recomputation; among equally long
 * matches the least loaded. When the best-matching P's are all overloaded (no free slot, too few
 * free blocks, or no decode instance with room), fall back to load order rather than queue there.
 */
import type { SchedulerNode } from '../node.ts';
import { lessLoaded, type Pool } from '../pool.ts';
import type { PrefixIndex } from '../prefix-index.ts';
import type { Policy, PolicyDefinition, PolicyContext } from './policy.ts';

/**
 * Creates the cache_affinity policy over a prefix index.
 * @example const policy = cacheAffinity(prefixIndex, (id) => topology.get(id));
 */
export function cacheAffinity(prefix: PrefixIndex, lookup: (id: number) => SchedulerNode | undefined): Policy {
  return {
    name: 'cache_affinity',
    *order(pool, context) {
      const best: SchedulerNode[] = [];
      if (bestHolders(prefix, lookup, pool, context, best) !== undefined) {
        best.sort((a, b) => (lessLoaded(a, b) ? -1 : 1));
        yield* best;
        context.reason = 'cache_overloaded';
        context.matchedBlocks = 0;
      }
      yield* pool.ascending();
    },
    first(pool, context) {
      return bestHolders(prefix, lookup, pool, context) ?? pool.min();
    },
  };
}

/**
 * The P's holding the deepest prefix block held by any usable P: collected into `best` when given,
 * and the least loaded of them returned. Sets the context for what comes first: `cache_hit` with
 * the blocks matched for them, else `cache_overloaded` (holders exist but none fits) or
 * `cache_miss` for the load order that follows.
 */
function bestHolders(
  prefix: PrefixIndex,
  lookup: (id: number) => SchedulerNode | undefined,
  pool: Pool<SchedulerNode>,
  context: PolicyContext,
  best?: SchedulerNode[],
): SchedulerNode | undefined {
  const hashes = context.hashes;
  // Deepest block anyone holds: walk forward until a block nobody holds (chain hashes make a later
  // hit without the earlier ones unlikely, and eviction drops deep blocks first).
  let top = -1;
  while (top + 1 < hashes.length && prefix.holders(hashes[top + 1] as number).length > 0) top++;
  let least: SchedulerNode | undefined;
  let matched = 0;
  let overloaded = false;
  for (let level = top; level >= 0 && least === undefined && !overloaded; level--) {
    const holders = prefix.holders(hashes[level] as number);
    for (let i = 0; i < holders.length; i++) {
      const node = lookup(holders[i] as number);
      // A holder that is unhealthy, has no healthy D, or is excluded does not count as a match.
      if (node === undefined || node.role !== 'prefill' || !node.admissible || node.healthyLinks === 0 || context.excluded(node)) continue;
      if (pool.has(node) && context.fits(node)) {
        best?.push(node);
        if (least === undefined || lessLoaded(node, least)) least = node;
      } else overloaded = true;
    }
    if (least !== undefined || overloaded) matched = level + 1;
  }
  if (least !== undefined) {
    context.reason = 'cache_hit';
    context.matchedBlocks = matched;
    return least;
  }
  context.reason = overloaded ? 'cache_overloaded' : 'cache_miss';
  context.matchedBlocks = 0;
  return undefined;
}

/** The table's entry of cache_affinity (policies/index.ts registers it). */
export const definition: PolicyDefinition = {
  name: 'cache_affinity',
  roles: ['prefill'],
  reasons: ['cache_hit', 'cache_miss', 'cache_overloaded'],
  needs: ['prefix_index'],
  summary: "the P already holding the longest block-aligned prefix of the prompt (pdlink's own record), unless overloaded",
  create: ({ prefix, lookup }) => cacheAffinity(prefix!, lookup),
};
