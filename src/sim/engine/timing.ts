/**
 * The simulator's timing model, in one place so it can be stated and checked:
 *   prefill_ms = (prompt_tokens − cached_tokens) × prefill_ms_per_token
 *   decode ms per token = decode_ms_per_token × (1 + decode_batch_slowdown × (batch − 1))
 * where `batch` is the number of generating legs the engine runs at that token (this one
 * included). Prefills run one at a time per engine, in arrival order (prefill-queue.ts). A prefix-cache hit shortens prefill; a busier decoder generates each token more
 * slowly, as a real engine's iteration grows with its batch.
 */

/**
 * Milliseconds a prefill of `promptTokens` takes when `cachedTokens` of them are cached.
 * @example prefillMs(1000, 512, 0.1) // 48.8
 */
export function prefillMs(promptTokens: number, cachedTokens: number, msPerToken: number): number {
  return Math.max(0, promptTokens - cachedTokens) * msPerToken;
}

/**
 * Milliseconds between two generated tokens at a batch of `batch` generating legs.
 * @example decodeTokenMs(10, 0.05, 3) // 11
 */
export function decodeTokenMs(msPerToken: number, batchSlowdown: number, batch: number): number {
  return msPerToken * (1 + batchSlowdown * Math.max(0, batch - 1));
}
