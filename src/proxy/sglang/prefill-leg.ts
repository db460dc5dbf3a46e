/**
 * SGLang's P leg: P gets the same request as D (with the bootstrap fields) at the same time, and
 * its answer is consumed, never shown to the client. Its answer is sorted like the vLLM P leg's:
 * a JSON object (kept, for its prompt logprobs), a rejection that is the client's answer, or a
 * failure of P. It never throws, so the exchange can wait on it beside D's leg.
 */
import { parseJsonExact } from '../../core/exact-json.ts';
import { readLegText } from '../legs/idle.ts';
import type { LegHeaders } from '../legs/legs.ts';
import type { RetryReason } from '../telemetry/metrics.ts';
import { sendLeg } from '../legs/send-leg.ts';
import type { LegExchange } from '../exchange/types.ts';
import { passthrough, quoteError, transportMessage } from '../legs/upstream.ts';
import { UnusableAnswer } from '../legs/unusable-answer.ts';

export type PrefillLegResult =
  | { kind: 'ok'; answer: unknown }
  | { kind: 'rejected'; response: Response; status: number }
  | { kind: 'failed'; reason: RetryReason; message: string }
  | { kind: 'aborted' };

/**
 * Sends the P leg to `url` and sorts its answer; `signal` aborts it (the exchange's, or D's failure).
 * @example const result = await prefillLeg(exchange, url, p.id, headers, text, signal);
 */
export async function prefillLeg(
  exchange: Pick<LegExchange, 'deps' | 'request'>,
  url: string,
  p: number,
  headers: LegHeaders,
  legBody: string,
  signal: AbortSignal,
): Promise<PrefillLegResult> {
  const { settings, metrics } = exchange.deps;
  try {
    const res = await sendLeg(url, headers, legBody, signal, () => metrics.staleRetried('prefill'), settings);
    const text = await readLegText(res, settings.maxAnswerBytes);
    if (res.status >= 500)
      return { kind: 'failed', reason: 'status_5xx', message: `prefill instance ${p} answered ${res.status}: ${quoteError(text)}` };
    if (res.status >= 400) {
      const response = passthrough(res.status, res.headers.get('content-type'), text, exchange.request.requestId);
      return { kind: 'rejected', status: res.status, response };
    }
    if (res.status < 200 || res.status >= 300)
      return { kind: 'failed', reason: 'bad_answer', message: `prefill instance ${p} answered ${res.status}` };
    try {
      return { kind: 'ok', answer: parseJsonExact(text) };
    } catch {
      // SGLang's P may answer anything once the KV is handed over: only D's answer reaches the client.
      return { kind: 'ok', answer: undefined };
    }
  } catch (err) {
    if (signal.aborted) return { kind: 'aborted' };
    if (err instanceof UnusableAnswer) return { kind: 'failed', reason: 'bad_answer', message: `prefill instance ${p} ${err.message}` };
    return { kind: 'failed', reason: 'transport', message: `prefill instance ${p} could not be reached: ${transportMessage(err)}` };
  }
}
