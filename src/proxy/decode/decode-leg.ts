/**
 * One D leg: D gets the client's request with P's `kv_transfer_params`; a 2xx goes on to the client
 * (see decode-answer.ts), a 4xx is the client's answer, and a leg that provably never reached D
 * (its connection refused) comes back as Retryable for the loop in decode.ts to hand to another D.
 * Everything else (a 5xx, a connection lost after the leg went out) means D had the leg and may
 * have pulled P's blocks: the request fails, charged to D.
 */
import { errors, PdlinkError } from '../../core/errors.ts';
import { turnAfter } from '../../core/turns.ts';
import { wholeAnswer, streamedAnswer } from './decode-answer.ts';
import { decodeFailures, type Retryable } from './decode-failures.ts';
import { readLegText } from '../legs/idle.ts';
import { decodeBody, engineUrl, legHeaders, legText } from '../legs/legs.ts';
import type { PickedPair } from '../exchange/ports.ts';
import { sendLeg } from '../legs/send-leg.ts';
import { servedBy } from '../exchange/served-by.ts';
import type { DecodeExchange, LegExchange, Prefilled } from '../exchange/types.ts';
import { neverSent, type LegAnswer } from '../../platform/platform.ts';
import { passthrough, quoteError, transportMessage } from '../legs/upstream.ts';
import { UnusableAnswer } from '../legs/unusable-answer.ts';

/**
 * Sends the D leg of `exchange` to `pair.d`: the client's response, or Retryable when another D may
 * take the leg; other failures end the exchange and throw its Stop.
 * @example const outcome = await decodeLeg(exchange, prefilled, pair);
 */
export async function decodeLeg(exchange: DecodeExchange, prefilled: Prefilled, pair: PickedPair): Promise<Response | Retryable> {
  const { kind, body, requestId, clientHeaders } = exchange.request;
  const { breakers, metrics } = exchange.deps;
  const d = pair.d.id;
  const sentAt = performance.now();
  const fails = decodeFailures(exchange, d);

  // A large prompt: P's answer was handled in this turn, the leg is serialised in the next (turns.ts).
  const before = turnAfter(promptChars(exchange.prompt));
  if (before !== undefined) await before;
  // Serialised before D is asked, so that a body that cannot be sent is never counted against D.
  let legBody: string;
  try {
    legBody = legText(decodeBody(body, prefilled.kvTransferParams));
  } catch (err) {
    const failure = err instanceof PdlinkError ? err : errors.internal(err);
    throw exchange.fail('invalid', failure, { kind: 'fail', code: 'invalid_request', detail: failure.message });
  }
  const headers = legHeaders(clientHeaders, requestId);
  exchange.trace?.decodeSent(pair, headers);
  const { settings } = exchange.deps;
  let res: LegAnswer;
  try {
    res = await sendLeg(
      engineUrl(pair.d, kind, settings.engineTls !== undefined),
      headers,
      legBody,
      exchange.scope,
      () => metrics.staleRetried('decode'),
      settings,
    );
  } catch (err) {
    if (exchange.cause === null && neverSent(err)) {
      breakers?.recordFailure(d);
      return { reason: 'refused', stop: fails.failWith(`could not be reached: ${transportMessage(err)}`) };
    }
    if (exchange.cause === null && err instanceof UnusableAnswer) throw fails.refused(err.message);
    throw fails.broken(err, 'failed before answering');
  }
  exchange.trace?.decodeAnswered(res.status, res.headers);

  if (res.status < 200 || res.status >= 300) {
    let text: string;
    try {
      text = await readLegText(res, settings.maxAnswerBytes);
    } catch (err) {
      if (exchange.cause === null && err instanceof UnusableAnswer) throw fails.refused(err.message);
      throw fails.broken(err, `answered ${res.status}, then failed`);
    }
    if (res.status >= 400 && res.status < 500) {
      // D judged the request itself: its answer is the client's answer, and D is healthy.
      breakers?.recordSuccess(d);
      exchange.end('upstream_rejected', { kind: 'fail', code: 'decode_rejected', detail: `decode instance ${d} answered ${res.status}` });
      return servedBy(passthrough(res.status, res.headers.get('content-type'), text, requestId), pair);
    }
    // A 5xx (or any other status) came from a D that had the leg: it may have pulled P's blocks.
    throw fails.refused(`answered ${res.status}: ${quoteError(text)}`);
  }
  const answer = { res, d, sentAt, fails };
  return servedBy(await (exchange.streaming ? streamedAnswer(exchange, prefilled, answer) : wholeAnswer(exchange, answer)), pair);
}

/** About how long a prompt is as JSON text: its text, or its token ids at up to six characters each. */
function promptChars(prompt: LegExchange['prompt']): number {
  return prompt.text?.length ?? 6 * (prompt.tokens?.length ?? 0);
}
