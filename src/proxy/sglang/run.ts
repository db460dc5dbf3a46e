/**
 * One request under SGLang's PD protocol: the pair is placed and reserved as for vLLM
 * (placement.ts, the same ledger record), then the same body, with P's bootstrap fields, goes to
 * P and D at once; D pulls the KV from P's bootstrap server and its answer goes to the client.
 *
 * The legs depend on each other: a P that fails before D's first byte leaves D waiting for a room
 * that will never be filled, and a D that fails leaves P holding KV nobody will pull. So either
 * failure aborts the other leg, and before D's first byte the whole pair is tried again with a
 * fresh room (the old room's KV is no longer obtainable), up to `maxRetries` times, excluding the
 * instance that failed. After D's first byte the client has a 200 and D's failure ends the stream
 * with an error event, as on the vLLM path. A 4xx from either leg is the client's answer.
 */
import { errors, PdlinkError } from '../../core/errors.ts';
import { turnAfter } from '../../core/turns.ts';
import { parseJsonExact } from '../../core/exact-json.ts';
import { kvMovedOf } from '../../core/kv-report.ts';
import type { LegAnswer } from '../../platform/platform.ts';
import type { AttemptClock } from '../prefill/attempt.ts';
import { abortableDelay, backoffDelay } from '../prefill/backoff.ts';
import { engineUrl, legHeaders, legText } from '../legs/legs.ts';
import type { RetryReason } from '../telemetry/metrics.ts';
import { placePair } from '../placement/placement.ts';
import type { PairPicker, PickedPair } from '../exchange/ports.ts';
import type { RequestReservation } from '../placement/reservation.ts';
import { legReader, readLegBytes, readLegText } from '../legs/idle.ts';
import { sendLeg } from '../legs/send-leg.ts';
import { UnusableAnswer } from '../legs/unusable-answer.ts';
import { servedBy } from '../exchange/served-by.ts';
import { Stop } from '../exchange/stop.ts';
import { relayDecodeStream } from '../decode/decode-answer.ts';
import type { ChunkReader } from '../decode/stream.ts';
import type { DecodeExchange } from '../exchange/types.ts';
import { firstChunk, passthrough, quoteError, transportMessage } from '../legs/upstream.ts';
import { bootstrapPortOf, newBootstrap, withBootstrap } from './bootstrap.ts';
import { mergePromptLogprobs } from './logprobs.ts';
import { prefillLeg, type PrefillLegResult } from './prefill-leg.ts';

/** The exchange's private parts the run drives, as for the vLLM path. */
export interface SglangControls {
  readonly reservation: Pick<RequestReservation, 'take' | 'end' | 'transferring'>;
  readonly attemptClock: AttemptClock;
}

/** A pair's attempt that failed before D's first byte: the instance to blame and leave out next time. */
interface PairFailure {
  readonly side: 'p' | 'd';
  readonly id: number;
  readonly reason: RetryReason;
  readonly message: string;
}

/** P's failure, as a value the D side can race against. */
type PrefillFailure = Exclude<PrefillLegResult, { kind: 'ok' }>;

/**
 * Runs the request on pairs until D answers; failures end the exchange and throw its Stop.
 * @example return await runSglang(this, { reservation, attemptClock });
 */
export async function runSglang(exchange: DecodeExchange, controls: SglangControls): Promise<Response> {
  const { settings, metrics, breakers } = exchange.deps;
  // Checked before any pair is placed: a body that cannot be sent is the client's fault.
  let checked: string;
  try {
    checked = legText(exchange.request.body);
  } catch (err) {
    throw exchange.fail('invalid', err instanceof PdlinkError ? err : errors.internal(err), { kind: 'none' });
  }
  // A large body was just serialised in this turn: the legs are made in the next ones (turns.ts).
  const turn = turnAfter(checked.length);
  if (turn !== undefined) await turn;
  const failedP = new Set<number>();
  const failedD = new Set<number>();
  const placing = {
    prompt: exchange.prompt,
    deps: { picker: excludingD(exchange.deps.picker, failedD), ledger: exchange.deps.ledger },
    fail: exchange.fail.bind(exchange),
  };
  let last: PdlinkError | undefined;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) {
      try {
        await abortableDelay(backoffDelay(attempt, settings.backoffBaseMs, settings.backoffCapMs), exchange.signal);
      } catch {
        throw exchange.stopForAbort(undefined);
      }
    }
    const { pair } = placePair(placing, controls.reservation, failedP, last);
    const outcome = await attemptPair(exchange, controls, pair);
    if (outcome instanceof Response) return servedBy(outcome, pair);
    breakers?.recordFailure(outcome.id);
    controls.reservation.end({ kind: 'fail', code: outcome.side === 'p' ? 'prefill_failed' : 'decode_failed', detail: outcome.message });
    (outcome.side === 'p' ? failedP : failedD).add(outcome.id);
    last = errors.upstreamFailed(outcome.message);
    if (attempt >= settings.maxRetries) throw exchange.fail('upstream_failed', last, { kind: 'none' });
    metrics.retried(outcome.reason);
  }
}

/** The picker, leaving out the D instances that failed this request. */
function excludingD(picker: PairPicker, failedD: ReadonlySet<number>): PairPicker {
  return {
    pick: (request) => picker.pick(failedD.size === 0 ? request : { ...request, excludeD: new Set([...request.excludeD, ...failedD]) }),
  };
}

/** Sends both legs to `pair`: the client's response, or the failure worth another pair. */
async function attemptPair(exchange: DecodeExchange, controls: SglangControls, pair: PickedPair): Promise<Response | PairFailure> {
  const { kind, body, requestId, clientHeaders } = exchange.request;
  const { settings, metrics, breakers } = exchange.deps;
  const https = settings.engineTls !== undefined;
  const boot = newBootstrap(body, pair.p.ip, bootstrapPortOf(pair.p, settings.bootstrapPort));
  const shared = withBootstrap(body, boot);
  // P's answer is consumed, not relayed: one JSON object is all that is read from it.
  const pBody: Record<string, unknown> = { ...shared, stream: false };
  delete pBody['stream_options'];
  const legs = new AbortController();
  const signal = AbortSignal.any([exchange.signal, legs.signal]);
  const p = pair.p.id;
  const d = pair.d.id;

  controls.attemptClock.start();
  const started = performance.now();
  const pTask = prefillLeg(exchange, engineUrl(pair.p, kind, https), p, legHeaders(clientHeaders, requestId), legText(pBody), signal).then(
    (result) => {
      // A leg this attempt dropped must not touch the clock or the record of the next attempt.
      if (legs.signal.aborted) return result;
      controls.attemptClock.stop();
      if (result.kind === 'ok') {
        breakers?.recordSuccess(p);
        metrics.prefill((performance.now() - started) / 1000);
        controls.reservation.transferring();
      }
      return result;
    },
  );
  // Resolves only when P fails: what D's side races against until its first byte.
  const pFailed = pTask.then((result) => (result.kind === 'ok' ? new Promise<never>(() => {}) : result));

  /** Ends this attempt's legs (and P's clock): whatever is still running is no longer wanted. */
  const dropLegs = (): void => {
    legs.abort();
    controls.attemptClock.stop();
  };
  const aborted = (instance: number): never => {
    dropLegs();
    throw exchange.stopForAbort(instance);
  };
  const prefillFailed = (result: PrefillFailure): PairFailure => {
    dropLegs();
    if (result.kind === 'aborted' || exchange.cause !== null) return aborted(p);
    if (result.kind === 'rejected') {
      breakers?.recordSuccess(p);
      exchange.end('upstream_rejected', {
        kind: 'fail',
        code: 'prefill_rejected',
        detail: `prefill instance ${p} answered ${result.status}`,
      });
      throw new Stop(servedBy(result.response, pair));
    }
    return { side: 'p', id: p, reason: result.reason, message: result.message };
  };
  const decodeFailed = (reason: RetryReason, message: string): PairFailure => {
    dropLegs();
    if (exchange.cause !== null) return aborted(d);
    return { side: 'd', id: d, reason, message: `decode instance ${d} ${message}` };
  };

  const dSent = sendLeg(
    engineUrl(pair.d, kind, https),
    legHeaders(clientHeaders, requestId),
    legText(shared),
    signal,
    () => metrics.staleRetried('decode'),
    settings,
  );
  let head: LegAnswer | PrefillFailure;
  try {
    head = await Promise.race([dSent, pFailed]);
  } catch (err) {
    if (err instanceof UnusableAnswer) return decodeFailed('bad_answer', err.message);
    return decodeFailed('transport', `could not be reached: ${transportMessage(err)}`);
  }
  // A prefill failure has a kind; D's answer has none.
  if ('kind' in head) return prefillFailed(head);
  const res = head;

  if (res.status < 200 || res.status >= 300) {
    let text: string;
    try {
      text = await readLegText(res, settings.maxAnswerBytes);
    } catch (err) {
      if (err instanceof UnusableAnswer) return decodeFailed('bad_answer', err.message);
      return decodeFailed('transport', `answered ${res.status}, then failed: ${transportMessage(err)}`);
    }
    if (res.status >= 400 && res.status < 500) {
      // D judged the request itself; P's KV will never be pulled, so P's leg is dropped too.
      dropLegs();
      breakers?.recordSuccess(d);
      exchange.end('upstream_rejected', { kind: 'fail', code: 'decode_rejected', detail: `decode instance ${d} answered ${res.status}` });
      return passthrough(res.status, res.headers.get('content-type'), text, requestId);
    }
    return decodeFailed(res.status >= 500 ? 'status_5xx' : 'bad_answer', `answered ${res.status}: ${quoteError(text)}`);
  }
  const dAt = performance.now();
  // D has its KV once it answers: a P that fails from then on costs this request nothing, but is charged.
  void pTask.then((result) => {
    if (result.kind === 'failed' && !legs.signal.aborted) breakers?.recordFailure(p);
  });
  if (!exchange.streaming) return wholeAnswer(exchange, { res, d, dAt, pTask, pFailed, prefillFailed, decodeFailed });

  const reader: ChunkReader | undefined = legReader(res);
  if (reader === undefined) return decodeFailed('bad_answer', `answered ${res.status} with an empty body`);
  let first: Uint8Array | null | PrefillFailure;
  try {
    first = await Promise.race([firstChunk(reader), pFailed]);
  } catch (err) {
    return decodeFailed('transport', `failed before its first byte: ${transportMessage(err)}`);
  }
  if (first === null) return decodeFailed('bad_answer', `answered ${res.status} with an empty body`);
  if (!(first instanceof Uint8Array)) {
    reader.cancel().catch(() => {});
    return prefillFailed(first);
  }
  exchange.firstByte();
  const firstAt = performance.now();
  metrics.transfer((firstAt - dAt) / 1000);
  return relayDecodeStream(exchange, { res, reader, first, d, firstAt, onFailure: () => legs.abort() });
}

interface WholeLegs {
  readonly res: LegAnswer;
  readonly d: number;
  readonly dAt: number;
  readonly pTask: Promise<PrefillLegResult>;
  readonly pFailed: Promise<PrefillFailure>;
  readonly prefillFailed: (result: PrefillFailure) => PairFailure;
  readonly decodeFailed: (reason: RetryReason, message: string) => PairFailure;
}

/** D's whole answer, with P's prompt logprobs merged in when the client asked for them. */
async function wholeAnswer(exchange: DecodeExchange, legs: WholeLegs): Promise<Response | PairFailure> {
  const { res, d, dAt, pTask, pFailed, prefillFailed, decodeFailed } = legs;
  const { breakers, metrics, settings } = exchange.deps;
  let bytes: Uint8Array | PrefillFailure;
  try {
    bytes = await Promise.race([readLegBytes(res, settings.maxAnswerBytes), pFailed]);
  } catch (err) {
    if (err instanceof UnusableAnswer) return decodeFailed('bad_answer', err.message);
    return decodeFailed('transport', `failed while answering: ${transportMessage(err)}`);
  }
  if (!(bytes instanceof Uint8Array)) return prefillFailed(bytes);
  if (bytes.byteLength === 0) return decodeFailed('bad_answer', `answered ${res.status} with an empty body`);
  // D answered whole, so P handed its KV over: P's answer matters only for the prompt's logprobs.
  let answer: string | Uint8Array = bytes;
  const pResult = exchange.request.body['return_logprob'] === true ? await pTask : undefined;
  if (pResult?.kind === 'ok') {
    try {
      answer = JSON.stringify(mergePromptLogprobs(pResult.answer, parseJsonExact(new TextDecoder().decode(bytes))));
    } catch {
      // D's answer is not JSON: it goes to the client as D sent it.
    }
  }
  breakers?.recordSuccess(d);
  metrics.decode((performance.now() - dAt) / 1000);
  exchange.end('ok', { kind: 'complete', ...kvMovedOf(res.headers) });
  return passthrough(res.status, res.headers.get('content-type'), answer, exchange.request.requestId);
}
