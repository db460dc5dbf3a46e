/**
 * `precise_prefix` (prefill and decode): prefer the instance that holds the most of the prompt's KV
 * blocks, as its own KV events say (kv-hits.ts), weighed against its load: score = the share of the
 * prompt cached − `loadWeight` × load. For P that saves the recomputation; for D, chosen among the
 * chosen P's decode instances, it finds the D that already holds the conversation's earlier turns
 * (what decode-first's local prefill reuses). Instances with no hit follow in load order, which is
 * the same score with nothing cached.
 */
import type { KvHits } from '../kv-hits.ts';
import type { SchedulerNode } from '../node.ts';
import { lessLoaded, type Pool } from '../pool.ts';
import type { Policy, PolicyDefinition, PolicyContext } from './policy.ts';

/** The default weight of load against the cached share (equal footing: a whole prompt cached outweighs a full instance). */
export const DEFAULT_LOAD_WEIGHT = 1;

/**
 * Creates the precise_prefix policy over the hits of the pick in progress.
 * @example const policy = precisePrefix(hits, (id) => topology.get(id), 1);
 */
export function precisePrefix(hits: KvHits, lookup: (id: number) => SchedulerNode | undefined, loadWeight: number): Policy {
  const score = (node: SchedulerNode): number => share(hits, node) - loadWeight * node.load;
  const better = (a: SchedulerNode, b: SchedulerNode): boolean => {
    const sa = score(a);
    const sb = score(b);
    return sa !== sb ? sa > sb : lessLoaded(a, b);
  };
  /** Pool members with a hit, best first. */
  const holders = (pool: Pool<SchedulerNode>): SchedulerNode[] => {
    const out: SchedulerNode[] = [];
    for (const [id] of hits.entries()) {
      const node = lookup(id);
      if (node !== undefined && pool.has(node)) out.push(node);
    }
    return out.sort((a, b) => (better(a, b) ? -1 : 1));
  };
  const mark = (context: PolicyContext, node: SchedulerNode): void => {
    const cached = hits.tokensOf(node.id);
    context.reason = cached > 0 ? 'cache_hit' : 'cache_miss';
    context.matchedBlocks = Math.floor(cached / node.instance.blockSize);
  };
  return {
    name: 'precise_prefix',
    *order(pool, context) {
      const best = holders(pool);
      let h = 0;
      // Members without a hit score −weight × load: the pool's load order is their order.
      for (const member of pool.ascending()) {
        while (h < best.length && better(best[h]!, member)) {
          mark(context, best[h]!);
          yield best[h++]!;
        }
        if (hits.tokensOf(member.id) > 0) continue;
        mark(context, member);
        yield member;
      }
      while (h < best.length) {
        mark(context, best[h]!);
        yield best[h++]!;
      }
    },
    first(pool, context) {
      let top: SchedulerNode | undefined;
      let holding = 0;
      for (const [id] of hits.entries()) {
        const node = lookup(id);
        if (node === undefined || !pool.has(node)) continue;
        holding++;
        if (top === undefined || better(node, top)) top = node;
      }
      // When every member holds some of the prompt there is no miss to weigh (and none to search for).
      const least = holding === pool.size ? undefined : firstMiss(pool, hits);
      const pick = top === undefined ? least : least === undefined || better(top, least) ? top : least;
      if (pick !== undefined) mark(context, pick);
      return pick;
    },
  };
}

function share(hits: KvHits, node: SchedulerNode): number {
  const cached = hits.tokensOf(node.id);
  if (cached === 0) return 0;
  return hits.promptTokens > 0 ? Math.min(1, cached / hits.promptTokens) : 1;
}

/** The least-loaded member without a hit (the first of the order's misses). */
function firstMiss(pool: Pool<SchedulerNode>, hits: KvHits): SchedulerNode | undefined {
  const min = pool.min();
  if (min === undefined || hits.tokensOf(min.id) === 0) return min;
  for (const member of pool.ascending()) if (hits.tokensOf(member.id) === 0) return member;
  return undefined;
}

/** The table's entry of precise_prefix (policies/index.ts registers it). */
export const definition: PolicyDefinition = {
  name: 'precise_prefix',
  roles: ['prefill', 'decode'],
  reasons: ['cache_hit', 'cache_miss', 'prefill_saturated'],
  needs: ['kv_hits'],
  summary: "the most of the prompt cached, as the engines' KV events say, weighed against load",
  create: ({ hits, lookup, loadWeight }) => precisePrefix(hits!, lookup, loadWeight),
};
