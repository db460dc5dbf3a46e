/**
 * Waits between prefill attempts: exponential backoff with full jitter, so retries of many
 * requests that failed together do not arrive together, and the wait stays bounded by a cap.
 */

/**
 * The wait before retry `attempt` (1 for the first retry): uniform in [0, min(cap, base·2^(attempt−1))].
 * @example backoffDelay(3, 50, 2000) // somewhere in [0, 200]
 */
export function backoffDelay(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as `signal` aborts.
 * @example await abortableDelay(backoffDelay(1, 50, 2000), leg.signal);
 */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
