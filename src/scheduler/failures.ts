/**
 * Why the scheduler found no pair, in words an operator can act on. A failed pick carries a reason
 * code for metrics and callers, and this message for the 503 the client sees; keeping both here
 * means a new reason cannot ship without saying what it means.
 */
import type { CheckedRequest } from './request.ts';
import type { TopologyCounts } from './topology.ts';
import type { PickFailureReason } from './types.ts';

/**
 * The first missing ingredient of a pair, when the pool a pick draws from is empty.
 * @example diagnose(topology.counts()) // 'no_decode' when no D is registered
 */
export function diagnose(counts: TopologyCounts): PickFailureReason {
  if (counts.prefill === 0) return 'no_prefill';
  if (counts.decode === 0) return 'no_decode';
  if (counts.linkedPrefill === 0) return 'no_linked_decode';
  if (counts.healthyLinkedPrefill === 0) return 'no_healthy_prefill';
  if (counts.pairedPrefill === 0) return 'no_healthy_decode';
  return 'no_capacity';
}

/**
 * The message of a failed pick; `no_capacity` names what the request needed.
 * @example failureMessage('no_prefill', checked) // 'no prefill instance is registered'
 */
export function failureMessage(reason: PickFailureReason, request: CheckedRequest): string {
  switch (reason) {
    case 'no_prefill':
      return 'no prefill instance is registered';
    case 'no_decode':
      return 'no decode instance is registered';
    case 'no_linked_decode':
      return 'no decode instance lists a prefill instance of its own group among its peers';
    case 'no_healthy_prefill':
      return 'every prefill instance with a linked decode instance is unhealthy (circuit open or trial in progress)';
    case 'no_healthy_decode':
      return 'every decode instance linked to a healthy prefill instance is unhealthy (circuit open or trial in progress)';
    case 'no_capacity': {
      let need = '';
      if (request.promptBlocks !== undefined) need = ` and ${request.promptBlocks} free blocks`;
      else if (request.promptTokens !== undefined) need = ` and free blocks for ${request.promptTokens.length} prompt tokens`;
      return `no healthy prefill/decode pair has a free slot${need} on both instances`;
    }
    case 'excluded':
      return 'every prefill/decode pair with room is excluded by the request';
    case 'instance_cap':
      return 'every healthy prefill/decode pair has an instance at its limit of requests in flight (single_node_max_requests)';
  }
}
