/**
 * The one place a runtime status becomes an error: every non-zero `int32_t` from pdrt goes
 * through `check`, and arguments the C layout cannot carry are refused by `invalid`.
 */
import { LLM_STATUS, LlmStatusError } from '../core/llm-status.ts';

/**
 * Throws an `LlmStatusError` for any non-zero status.
 * @example check(symbols.pdrt_destroy(handle), 'pdrt_destroy')
 */
export function check(rc: number, context: string): void {
  if (rc !== 0) throw new LlmStatusError(rc, context);
}

/**
 * An `LLM_PARAM_INVALID` error naming the argument, for input refused before the call.
 * @example throw invalid('clusters[2].remoteIp', 'longer than 63 bytes')
 */
export function invalid(field: string, why: string): LlmStatusError {
  return new LlmStatusError(LLM_STATUS.LLM_PARAM_INVALID, `${field}: ${why}`);
}
