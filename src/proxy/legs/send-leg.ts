/**
 * Sending a leg: every P and D leg goes out through `sendLeg`, once. A leg that may have reached
 * its engine is never sent to it again: a connection lost after the request went out (reset,
 * closed before the answer's head) may as well be an engine that received the request, acted on
 * it (D pulls P's KV blocks and tells P to free them) and died, as an engine closing an idle
 * connection just as the request arrived. The clients tell the two apart only where it can be
 * proved: the socket client sends on a fresh connection a request whose pooled connection it
 * found closed before writing one byte (the answer says so: LegAnswer.resent), and marks the
 * failures of requests that never left (runtime.ts's neverSent). Its pooled connections close
 * before an engine's own keep-alive timeout would, which keeps the race with an idle close rare.
 *
 * The answer's head is checked here for what no leg can use: a content coding (every leg asks
 * for identity; see unusable-answer.ts). A large leg, serialised in the turn that calls, is sent in
 * the next one (turns.ts): serialising and encoding megabytes back to back held the event loop.
 */
import { turnAfter } from '../../core/turns.ts';
import type { AbortParent } from './abort-scope.ts';
import type { LegHeaders } from './legs.ts';
import { postLeg, type LegClient } from './upstream.ts';
import { refuseEncoded } from './unusable-answer.ts';
import type { LegAnswer } from '../../platform/platform.ts';

/** How a leg is sent: the client it goes over and the engine's silence that fails it. */
export interface LegSending extends LegClient {
  /** `http_timeout_seconds` in ms (Infinity = none): see idle.ts. */
  readonly engineIdleTimeoutMs: number;
}

/**
 * Sends one leg (see postLeg) and returns its answer once the head has come; `onResent` is called
 * when the socket client had to send it on a fresh connection (see above).
 * @throws the transport's error, or UnusableAnswer for an encoded answer.
 * @example const res = await sendLeg(url, headers, text, scope, () => metrics.staleRetried('decode'), settings);
 */
export async function sendLeg(
  url: string,
  headers: LegHeaders,
  body: string,
  signal: AbortParent,
  onResent: () => void,
  sending: LegSending,
): Promise<LegAnswer> {
  const turn = turnAfter(body.length);
  if (turn !== undefined) await turn;
  const response = await postLeg(url, headers, body, signal, sending.engineIdleTimeoutMs, sending);
  if (response.resent === true) onResent();
  refuseEncoded(response);
  return response;
}
