/**
 * `cache_affinity` (prefill only): prefer the P that already holds the longest prefix of the
 * prompt, by block chain hashes, so its prefix cache saves the recomputation; among equally long
 * matches the least loaded. When the best-matching P's are all overloaded (no free slot, too few
 * free blocks, or no decode instance with room), fall back to load order rather than queue there.
 */
import type { SchedulerNode } from '../node.ts';
import { lessLoaded } from '../pool.ts';
import type { PrefixIndex } from '../prefix-index.ts';
import type { Policy } from './policy.ts';

/**
 * Creates the cache_affinity policy over a prefix index.
 * @example const policy = cacheAffinity(prefixIndex, (id) => topology.get(id));
 */
export function cacheAffinity(prefix: PrefixIndex, lookup: (id: number) => SchedulerNode | undefined): Policy {
  return {
    name: 'cache_affinity',
    *order(pool, context) {
      const hashes = context.hashes;
      // Deepest block anyone holds: walk forward until a block nobody holds (chain hashes make
      // a later hit without the earlier ones unlikely, and eviction drops deep blocks first).
      let top = -1;
      while (top + 1 < hashes.length && prefix.holders(hashes[top + 1] as number).length > 0) top++;
      const best: SchedulerNode[] = [];
      let matched = 0;
      let overloaded = false;
      for (let level = top; level >= 0 && best.length === 0 && !overloaded; level--) {
        for (const id of prefix.holders(hashes[level] as number)) {
          const node = lookup(id);
          // A holder that is unhealthy, has no healthy D, or is excluded does not count as a match.
          if (node === undefined || node.role !== 'prefill' || !node.admissible || node.healthyLinks === 0 || context.excluded(node))
            continue;
          if (pool.has(node) && context.fits(node)) best.push(node);
          else overloaded = true;
        }
        if (best.length > 0 || overloaded) matched = level + 1;
      }
      if (best.length > 0) {
        best.sort((a, b) => (lessLoaded(a, b) ? -1 : 1));
        context.reason = 'cache_hit';
        context.matchedBlocks = matched;
        yield* best;
        overloaded = true;
      }
      context.reason = overloaded ? 'cache_overloaded' : 'cache_miss';
      context.matchedBlocks = 0;
      yield* pool.ascending();
    },
  };
}
