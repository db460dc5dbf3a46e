/**
 * A pass over a request body of megabytes (decoding it, parsing it, serialising a leg, encoding the
 * leg for the wire) holds the event loop about 10 ms per 4 MiB; run back to back in one turn, the
 * passes over one large prompt add up to more than 50 ms, and every other request and probe waits
 * for them. Between passes over a text of at least LARGE_TEXT_CHARS, the work gives the loop a turn.
 * A body relayed as fast as both ends go does the same every TURN_BYTES (platform/h1-answer.ts,
 * proxy/decode/stream.ts).
 */

/** Texts this long (UTF-16 code units, about bytes for a prompt) give the loop a turn between passes. */
export const LARGE_TEXT_CHARS = 1 << 20;
/** Bytes of a relayed body after which the relay gives the loop a turn. */
export const TURN_BYTES = 1 << 20;

/**
 * A promise of the loop's next turn when `length` is large, else undefined (nothing to wait for:
 * small bodies pay no extra turn).
 * @example const turn = turnAfter(text.length); if (turn !== undefined) await turn;
 */
export function turnAfter(length: number): Promise<void> | undefined {
  return length >= LARGE_TEXT_CHARS ? nextTurn() : undefined;
}

/**
 * Resolves in the event loop's next turn, after the I/O and timers waiting now.
 * @example await nextTurn();
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
