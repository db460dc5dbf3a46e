/**
 * Decode-first conditional disaggregation: D is chosen first, and it prefills the request itself
 * (no P leg, no KV transfer) when it already holds all but at most `max_local_prefill_length` tokens
 * of the prompt (a conversation's next turn on the D that decoded the last one), or when no P can
 * take the request at all (every P saturated or down). Otherwise the usual P-then-D pick follows.
 */
import type { KvHits } from './kv-hits.ts';
import type { Pair, PickFailureReason, PolicyChoice } from './types.ts';
import type { SchedulerNode } from './node.ts';
import { lessLoaded } from './pool.ts';
import { blocksNeeded, type CheckedRequest } from './request.ts';
import type { Topology } from './topology.ts';

/**
 * The D holding all but at most `maxUncached` tokens of the prompt that scores best (cached share
 * against load), among D's that can take the request now; undefined when none.
 * @example const d = holdingDecode(topology, hits, checked, 256, 1);
 */
export function holdingDecode(
  topology: Topology,
  hits: KvHits,
  checked: CheckedRequest,
  maxUncached: number,
  loadWeight: number,
): SchedulerNode | undefined {
  const total = hits.promptTokens;
  if (total === 0) return undefined;
  let best: SchedulerNode | undefined;
  let bestScore = -Infinity;
  for (const [id, cached] of hits.entries()) {
    if (total - cached > maxUncached) continue;
    const node = topology.get(id);
    if (node === undefined || !usable(node, checked)) continue;
    const score = Math.min(1, cached / total) - loadWeight * node.load;
    if (score > bestScore || (score === bestScore && best !== undefined && lessLoaded(node, best))) {
      best = node;
      bestScore = score;
    }
  }
  return best;
}

/**
 * The least-loaded D that can take the request now, for when no P can (a walk over the instances:
 * only on that failure).
 * @example const d = leastLoadedDecode(topology, checked);
 */
export function leastLoadedDecode(topology: Topology, checked: CheckedRequest): SchedulerNode | undefined {
  let best: SchedulerNode | undefined;
  for (const node of topology.nodes()) if (usable(node, checked) && (best === undefined || lessLoaded(node, best))) best = node;
  return best;
}

/** Failures on the P side, which decode-first answers with a local prefill on D. */
export const PREFILL_SIDE: ReadonlySet<PickFailureReason> = new Set([
  'no_prefill',
  'no_linked_decode',
  'no_healthy_prefill',
  'no_capacity',
]);

/**
 * The pair of a request D prefills itself: D stands for P too (the reservation and the served-by
 * header already use D alone on the local path).
 * @example return localPair(d, policy, 'cache_hit', hits.tokensOf(d.id));
 */
export function localPair(d: SchedulerNode, policy: PolicyChoice, reason: Pair['reason'], cachedTokens: number): Pair {
  return {
    ok: true,
    p: d.instance,
    d: d.instance,
    policy,
    reason,
    matchedBlocks: Math.floor(cachedTokens / d.instance.blockSize),
    path: 'local',
  };
}

function usable(node: SchedulerNode, checked: CheckedRequest): boolean {
  return node.role === 'decode' && node.viable && !checked.excludeD.has(node.id) && node.freeBlocks >= blocksNeeded(checked, node.instance);
}
