/**
 * One D leg: D gets the client's request with P's `kv_transfer_params`; a 2xx goes on to the client
 * (see decode-answer.ts), a 4xx is the client's answer, and a refused connection or a 5xx before
 * D's first byte comes back as Retryable for the loop in decode.ts to hand to another D.
 */
import { errors, PdlinkError } from '../core/errors.ts';
import { wholeAnswer, streamedAnswer } from './decode-answer.ts';
import { decodeFailures, type Retryable } from './decode-failures.ts';
import { readLegText } from './idle.ts';
import { refusedConnection } from './decode-retry.ts';
import { decodeBody, engineUrl, legHeaders, legText } from './legs.ts';
import type { PickedPair } from './ports.ts';
import { sendLeg } from './send-leg.ts';
import { servedBy } from './served-by.ts';
import type { DecodeExchange, Prefilled } from './types.ts';
import type { LegAnswer } from '../runtime/runtime.ts';
import { passthrough, quoteError, transportMessage } from './upstream.ts';

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
  let res: LegAnswer;
  try {
    res = await sendLeg(
      engineUrl(pair.d, kind, exchange.deps.settings.engineTls !== undefined),
      headers,
      legBody,
      exchange.scope,
      exchange.deps.origins,
      () => metrics.staleRetried('decode'),
      exchange.deps.settings.engineIdleTimeoutMs,
      exchange.deps.settings,
    );
  } catch (err) {
    if (exchange.cause === null && refusedConnection(err)) {
      breakers?.recordFailure(d);
      return { reason: 'refused', stop: fails.failWith(`could not be reached: ${transportMessage(err)}`) };
    }
    throw fails.broken(err, 'could not be reached');
  }
  exchange.trace?.decodeAnswered(res.status, res.headers);

  if (res.status < 200 || res.status >= 300) {
    let text: string;
    try {
      text = await readLegText(res);
    } catch (err) {
      throw fails.broken(err, `answered ${res.status}, then failed`);
    }
    if (res.status >= 400 && res.status < 500) {
      // D judged the request itself: its answer is the client's answer, and D is healthy.
      breakers?.recordSuccess(d);
      exchange.end('upstream_rejected', { kind: 'fail', code: 'decode_rejected', detail: `decode instance ${d} answered ${res.status}` });
      return servedBy(passthrough(res.status, res.headers.get('content-type'), text, requestId), pair);
    }
    if (res.status >= 500) {
      breakers?.recordFailure(d);
      return { reason: 'status_5xx', stop: fails.failWith(`answered ${res.status}: ${quoteError(text)}`) };
    }
    throw fails.refused(`answered ${res.status}: ${quoteError(text)}`);
  }
  const answer = { res, d, sentAt, fails };
  return servedBy(await (exchange.streaming ? streamedAnswer(exchange, prefilled, answer) : wholeAnswer(exchange, answer)), pair);
}
