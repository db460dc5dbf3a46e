/**
 * The latency arithmetic of one streamed request, from the times the client saw: time to first
 * token, the gaps between token-carrying chunks, time per output token, end to end. Kept apart
 * from the network code so the arithmetic is checked on scripted times.
 */

export interface Timings {
  /** First token-carrying chunk minus the send time. */
  readonly ttftMs: number | null;
  /** Gaps between consecutive token-carrying chunks. */
  readonly itlMs: number[];
  /**
   * (last token chunk − first token chunk) / (output tokens − 1): the decode pace after the first
   * token, as vLLM's benchmark defines it; null with fewer than two tokens.
   */
  readonly tpotMs: number | null;
  /** End of the stream minus the send time. */
  readonly e2eMs: number;
}

/**
 * Computes the timings; `outputTokens` is the server's count when it reported usage, else the
 * number of token-carrying chunks.
 * @example timingsOf(0, [100, 110, 130], 3, 131) // { ttftMs: 100, itlMs: [10, 20], tpotMs: 15, e2eMs: 131 }
 */
export function timingsOf(sentAt: number, tokenTimes: readonly number[], outputTokens: number, endAt: number): Timings {
  const first = tokenTimes[0];
  const last = tokenTimes[tokenTimes.length - 1];
  const itlMs: number[] = [];
  for (let i = 1; i < tokenTimes.length; i++) itlMs.push(tokenTimes[i]! - tokenTimes[i - 1]!);
  return {
    ttftMs: first === undefined ? null : first - sentAt,
    itlMs,
    tpotMs: first === undefined || last === undefined || outputTokens < 2 ? null : (last - first) / (outputTokens - 1),
    e2eMs: endAt - sentAt,
  };
}
