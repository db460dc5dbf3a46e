/**
 * Conditional disaggregation: whether a placed request skips the P leg and is prefilled by its D.
 * A short uncached prompt costs D little and saves a KV transfer; when every P's queue is long,
 * D prefilling beats waiting. Both limits are off unless configured
 * (`scheduler.conditional_disaggregation` in the Coordinator's file).
 */

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
