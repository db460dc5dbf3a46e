/**
 * One prefill attempt: P gets its leg, and its answer is sorted into what the retry loop acts on —
 * KV parameters for D, a rejection that is the client's answer, a failure worth another P, or the
 * exchange's abort.
 */
import type { AbortScope } from '../legs/abort-scope.ts';
import { parseJsonExact } from '../../core/exact-json.ts';
import { readLegText } from '../legs/idle.ts';
import { engineUrl, legHeaders } from '../legs/legs.ts';
import type { RetryReason } from '../telemetry/metrics.ts';
import type { PickedPair } from '../exchange/ports.ts';
import { sendLeg } from '../legs/send-leg.ts';
import type { RequestTrace } from '../telemetry/trace.ts';
import type { AbortCause, ExchangeDeps, ExchangeRequest } from '../exchange/types.ts';
import { passthrough, quoteError, transportMessage } from '../legs/upstream.ts';
import { UnusableAnswer } from '../legs/unusable-answer.ts';

export type AttemptResult =
  | { kind: 'ok'; kvTransferParams: unknown }
  | { kind: 'rejected'; response: Response; status: number }
  | { kind: 'retry'; reason: RetryReason; message: string }
  | { kind: 'aborted' };

/** What an attempt sees of its exchange. */
export interface AttemptExchange {
  readonly request: Pick<ExchangeRequest, 'kind' | 'requestId' | 'clientHeaders'>;
  readonly deps: Pick<ExchangeDeps, 'metrics' | 'settings'>;
  readonly scope: AbortScope;
  readonly cause: AbortCause | null;
  readonly trace?: RequestTrace;
}

/** The exchange's per-attempt clock: started before P is asked, stopped once the attempt is over. */
export interface AttemptClock {
  start(): void;
  stop(): void;
}

/**
 * Asks P of `pair` to prefill with the P leg's body `legBody` (serialised once, before any P is
 * asked: see legText) and sorts its answer; never throws. Everything that fails in here is P's doing.
 * @example const result = await attemptPrefill(exchange, attemptClock, pair, legText(prefillBody(body)));
 */
export async function attemptPrefill(
  exchange: AttemptExchange,
  clock: AttemptClock,
  pair: PickedPair,
  legBody: string,
): Promise<AttemptResult> {
  const { kind, requestId, clientHeaders } = exchange.request;
  if (exchange.scope.aborted) return { kind: 'aborted' };
  clock.start();
  const p = pair.p.id;
  const headers = legHeaders(clientHeaders, requestId);
  exchange.trace?.prefillSent(pair, headers);
  const { settings } = exchange.deps;
  try {
    const res = await sendLeg(
      engineUrl(pair.p, kind, settings.engineTls !== undefined),
      headers,
      legBody,
      exchange.scope,
      () => exchange.deps.metrics.staleRetried('prefill'),
      settings,
    );
    // Read the whole answer (bounded): it is small, and a drained body returns the connection to the pool.
    const text = await readLegText(res, settings.maxAnswerBytes);
    if (res.status >= 500)
      return { kind: 'retry', reason: 'status_5xx', message: `prefill instance ${p} answered ${res.status}: ${quoteError(text)}` };
    if (res.status >= 400)
      return {
        kind: 'rejected',
        status: res.status,
        response: passthrough(res.status, res.headers.get('content-type'), text, requestId),
      };
    if (res.status < 200 || res.status >= 300)
      return { kind: 'retry', reason: 'bad_answer', message: `prefill instance ${p} answered ${res.status}` };
    let answer: unknown;
    try {
      answer = parseJsonExact(text);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return {
        kind: 'retry',
        reason: 'bad_answer',
        message: `prefill instance ${p} answered ${res.status} without a usable JSON body: ${why}`,
      };
    }
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
      return {
        kind: 'retry',
        reason: 'bad_answer',
        message: `prefill instance ${p} answered ${res.status} with a body that is not a JSON object`,
      };
    }
    const params = (answer as { kv_transfer_params?: unknown }).kv_transfer_params;
    return { kind: 'ok', kvTransferParams: params === null ? undefined : params };
  } catch (err) {
    if (exchange.cause !== null) return { kind: 'aborted' };
    if (err instanceof UnusableAnswer) return { kind: 'retry', reason: 'bad_answer', message: `prefill instance ${p} ${err.message}` };
    return { kind: 'retry', reason: 'transport', message: `prefill instance ${p} could not be reached: ${transportMessage(err)}` };
  } finally {
    clock.stop();
  }
}
