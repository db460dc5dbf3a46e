/**
 * Conditional disaggregation: whether a placed request skips the P leg and is prefilled by its D.
 * A short uncached prompt costs D little and saves a KV transfer; when every P's queue is long,
 * D prefilling beats waiting. Both limits are off unless configured
 * (`scheduler.conditional_disaggregation` in the Coordinator's file).
 */

import type { LoadSource } from './loads.ts';

export type PdPath = 'disaggregated' | 'local';

export const PD_PATHS: readonly PdPath[] = ['disaggregated', 'local'];

export interface LocalPrefillRule {
  /** Prefill on D when the prompt's uncached tokens are at most this many. */
  readonly maxLocalPrefillLength?: number;
  /** Prefill on D when every P holds more than this many of this Coordinator's requests. */
  readonly maxPrefillQueueSize?: number;
}

/**
 * The path of one request: `local` exactly when one of the rule's limits is set and met.
 * `uncachedTokens` is undefined when the prompt's length is unknown (never local by length);
 * `prefillQueues` has one entry per prefill instance (none: never local by queue).
 * @example choosePath({ maxLocalPrefillLength: 256 }, 100, [3, 0]) // 'local'
 */
export function choosePath(rule: LocalPrefillRule, uncachedTokens: number | undefined, prefillQueues: readonly number[]): PdPath {
  const length = rule.maxLocalPrefillLength;
  if (length !== undefined && uncachedTokens !== undefined && uncachedTokens <= length) return 'local';
  const queue = rule.maxPrefillQueueSize;
  if (queue !== undefined && prefillQueues.length > 0 && prefillQueues.every((q) => q > queue)) return 'local';
  return 'disaggregated';
}

/**
 * The prompt's tokens not cached on P (undefined when its length is unknown).
 * @example uncachedTokens(300, 256) // 44
 */
export function uncachedTokens(tokens: number | undefined, cached: number): number | undefined {
  return tokens === undefined ? undefined : Math.max(0, tokens - cached);
}

/**
 * This process's requests on each prefill instance, for the queue limit.
 * @example choosePath(rule, uncached, prefillQueues(topology.nodes(), loads))
 */
export function prefillQueues(nodes: Iterable<{ readonly id: number; readonly role: string }>, loads: LoadSource): number[] {
  const queues: number[] = [];
  for (const node of nodes) if (node.role === 'prefill') queues.push(loads.load(node.id)?.reservedSlots ?? 0);
  return queues;
}
