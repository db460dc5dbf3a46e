/**
 * Every refusal admission gives, in one table: its status (429 when waiting longer might have helped,
 * 503 when nothing could serve the request or it was cut), its message and its `Retry-After`.
 */
import type { AdmissionSettings } from './settings.ts';
import type { Refusal, RefusalReason } from './types.ts';

/** What a refusal's wording depends on. */
export interface RefusalContext {
  readonly settings: AdmissionSettings;
  readonly classIndex: number;
  /** Whether any instance could serve the request (a timeout with none becomes 503). */
  readonly servable: boolean;
  /** Admission is closing (the Coordinator stops). */
  readonly closing: boolean;
}

/**
 * The refusal of `reason` for a request of the context's class.
 * @example refusalOf('timeout', { settings, classIndex: 1, servable: true, closing: false }).status // 429
 */
export function refusalOf(reason: RefusalReason, context: RefusalContext): Refusal {
  const { settings } = context;
  const retryAfterSeconds = settings.retryAfterSeconds;
  const policy = settings.classes[context.classIndex]!;
  if (reason === 'unavailable' || (reason === 'timeout' && !context.servable))
    return {
      reason: 'unavailable',
      status: 503,
      message: context.closing
        ? 'the Coordinator is shutting down'
        : 'no instance can serve this request: no prefill or no decode instance is registered',
      retryAfterSeconds,
    };
  if (reason === 'timeout')
    return {
      reason,
      status: 429,
      message:
        policy.queueTimeoutMs === 0
          ? `the cluster is saturated and class ${policy.name} does not wait`
          : `the cluster stayed saturated for the ${policy.queueTimeoutMs} ms class ${policy.name} may wait`,
      retryAfterSeconds,
    };
  if (reason === 'queue_full')
    return {
      reason,
      status: 429,
      message: `the admission queue is full (${settings.maxQueued} requests, ${settings.maxQueuedBytes} bytes) with requests of class ${policy.name} or higher`,
      retryAfterSeconds,
    };
  if (reason === 'shed')
    return {
      reason,
      status: 429,
      message: `class ${policy.name} was shed from a full queue for a request of a higher class`,
      retryAfterSeconds,
    };
  return {
    reason,
    status: 503,
    message: `cut for a request of a higher class before it answered (class ${policy.name})`,
    retryAfterSeconds,
  };
}
