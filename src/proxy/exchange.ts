/**
 * One proxied request from admission to the end of its response: pick a pair, reserve its KV
 * capacity, run the P leg (retrying on another P), then the D leg, and settle everything exactly
 * once whatever happens — the ledger record, the health reports, the metrics, the in-flight place.
 *
 * Every wait is bounded: a prefill attempt by `prefillTimeoutMs`, the first byte by
 * `firstTokenTimeoutMs`, the whole request by `inferTimeoutMs`. One AbortController covers the
 * request: a timeout, the client leaving or the end of the exchange aborts whatever leg is running.
 */
import { errors, PdlinkError } from '../errors.ts';
import { parseJsonExact } from '../http/body.ts';
import { stringifyBody, type CompletionBody, type CompletionKind } from '../schema/completions.ts';
import { abortableDelay, backoffDelay } from './backoff.ts';
import { errorResponse } from './errors.ts';
import { decodeBody, engineUrl, legHeaders, prefillBody } from './legs.ts';
import type { ProxyMetrics, ProxyOutcome, RetryReason } from './metrics.ts';
import type { HealthReporter, PairPicker, PickedPair, PickRequest, Reservations } from './ports.ts';
import { MAX_PLACEMENTS, shortInstances, union } from './placement.ts';
import { promptOf, type PromptInfo } from './prompt.ts';
import { RequestReservation, type LedgerEnd } from './reservation.ts';
import type { ProxySettings } from './settings.ts';
import { runDecode } from './decode.ts';
import { sendLeg, type PooledOrigins } from './stale.ts';
import { passthrough, quoteError, transportMessage } from './upstream.ts';

export interface ExchangeRequest {
  readonly kind: CompletionKind;
  /** `api` label of the metrics. */
  readonly api: string;
  readonly body: CompletionBody;
  readonly requestId: string;
  readonly clientHeaders: Headers;
  /** Aborts when the client disconnects. */
  readonly clientSignal: AbortSignal;
}

export interface ExchangeDeps {
  readonly picker: PairPicker;
  readonly ledger: Reservations;
  readonly health: HealthReporter | undefined;
  readonly metrics: ProxyMetrics;
  readonly settings: ProxySettings;
  /** Origins that answered before: a lost connection to one of them may be a stale pooled one. */
  readonly origins: PooledOrigins;
}

export type AbortCause = 'client_abort' | 'prefill_timeout' | 'first_token_timeout' | 'infer_timeout';

export type { LedgerEnd } from './reservation.ts';

/** Thrown inside an exchange to answer with `response`; the exchange has already ended. */
export class Stop {
  constructor(readonly response: Response) {}
}

/** P answered: the pair, P's KV parameters for D, and when P answered (performance.now()). */
export interface Prefilled {
  readonly pair: PickedPair;
  readonly kvTransferParams: unknown;
  readonly answeredAt: number;
}

type AttemptResult =
  | { kind: 'ok'; kvTransferParams: unknown }
  | { kind: 'rejected'; response: Response; status: number }
  | { kind: 'retry'; reason: RetryReason; message: string }
  | { kind: 'aborted' };

export class Exchange {
  readonly request: ExchangeRequest;
  readonly deps: ExchangeDeps;
  readonly prompt: PromptInfo;
  readonly #controller = new AbortController();
  readonly #onEnd: () => void;
  readonly #onClientAbort = (): void => this.abort('client_abort');
  #cause: AbortCause | null = null;
  #ended = false;
  readonly #reservation: RequestReservation;
  #timers: ReturnType<typeof setTimeout>[] = [];
  #firstTokenTimer: ReturnType<typeof setTimeout> | undefined;
  #attemptTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Starts the request's clocks; `onEnd` runs once when the exchange has settled.
   * @example const response = await new Exchange(request, deps, () => limit.release()).run();
   */
  constructor(request: ExchangeRequest, deps: ExchangeDeps, onEnd: () => void) {
    this.request = request;
    this.deps = deps;
    this.#onEnd = onEnd;
    this.prompt = promptOf(request.kind, request.body);
    const { settings } = deps;
    this.#reservation = new RequestReservation(deps.ledger, request.requestId, settings.leaseMs);
    this.#firstTokenTimer = this.#arm(settings.firstTokenTimeoutMs, 'first_token_timeout');
    this.#arm(settings.inferTimeoutMs, 'infer_timeout');
    if (request.clientSignal.aborted) this.abort('client_abort');
    else request.clientSignal.addEventListener('abort', this.#onClientAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Why the request was aborted, or null while it runs. */
  get cause(): AbortCause | null {
    return this.#cause;
  }

  get streaming(): boolean {
    return this.request.body.stream === true;
  }

  /**
   * Runs both legs; always resolves with the response for the client.
   * @example return exchange.run();
   */
  async run(): Promise<Response> {
    try {
      const prefilled = await this.#prefill();
      if (!this.streaming) this.#clearFirstToken();
      return await runDecode(this, prefilled);
    } catch (err) {
      if (err instanceof Stop) return err.response;
      console.error('pdlink: proxy exchange failed', err);
      const internal = errors.internal(err);
      this.end('internal', { kind: 'fail', code: 'internal', detail: 'internal error' });
      return errorResponse(internal, this.request.requestId);
    }
  }

  /** Aborts the running leg; the first cause sticks. */
  abort(cause: AbortCause): void {
    if (this.#cause === null) this.#cause = cause;
    this.#controller.abort(cause);
  }

  /** The first byte of D's answer arrived: the first-token clock stops. */
  firstByte(): void {
    this.#clearFirstToken();
  }

  /**
   * Settles the exchange once: stops the clocks, ends the ledger record, counts the outcome.
   * @example exchange.end('ok', { kind: 'complete' });
   */
  end(outcome: ProxyOutcome, ledgerEnd: LedgerEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#clearAttempt();
    this.request.clientSignal.removeEventListener('abort', this.#onClientAbort);
    this.#reservation.end(ledgerEnd);
    this.#reservation.close();
    // Anything still running (a body being read after a failure) has no reader any more.
    if (outcome !== 'ok') this.#controller.abort(this.#cause ?? 'ended');
    this.deps.metrics.requestEnded(this.request.api, outcome);
    this.#onEnd();
  }

  /**
   * Ends the exchange for its abort cause and builds the answer: 504 for a timeout (blaming the
   * instance that was running), nothing useful for a client that left.
   */
  stopForAbort(instanceId: number | undefined): Stop {
    const cause = this.#cause ?? 'client_abort';
    if (cause === 'client_abort') {
      this.end('client_abort', { kind: 'release' });
      // Nobody reads this: the client is gone. 499 is the conventional "client closed request".
      return new Stop(new Response(null, { status: 499 }));
    }
    if (instanceId !== undefined) this.deps.health?.recordFailure(instanceId);
    const err = this.timeoutError(cause, instanceId);
    this.end('timeout', { kind: 'fail', code: 'timeout', detail: err.message });
    return new Stop(errorResponse(err, this.request.requestId));
  }

  /** The 504 error of a timeout cause. */
  timeoutError(cause: AbortCause, instanceId: number | undefined): PdlinkError {
    const { settings } = this.deps;
    const on = instanceId === undefined ? '' : ` (instance ${instanceId})`;
    if (cause === 'prefill_timeout')
      return errors.timeout(`prefill instance ${instanceId} did not answer within ${settings.prefillTimeoutMs} ms`);
    if (cause === 'first_token_timeout')
      return errors.timeout(`no first token within ${settings.firstTokenTimeoutMs} ms (first_token_timeout)${on}`);
    return errors.timeout(`the request did not complete within ${settings.inferTimeoutMs} ms (infer_timeout)${on}`);
  }

  /** Ends the exchange with a proxy-made error response. */
  fail(outcome: ProxyOutcome, err: PdlinkError, ledgerEnd: LedgerEnd): Stop {
    this.end(outcome, ledgerEnd);
    return new Stop(errorResponse(err, this.request.requestId));
  }

  async #prefill(): Promise<Prefilled> {
    const { settings, metrics, health } = this.deps;
    const failedP = new Set<number>();
    let last: PdlinkError | undefined;
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) {
        try {
          await abortableDelay(backoffDelay(attempt, settings.backoffBaseMs, settings.backoffCapMs), this.signal);
        } catch {
          throw this.stopForAbort(undefined);
        }
      }
      const { pair, request } = this.#place(failedP, last);
      const started = performance.now();
      const result = await this.#attempt(pair);
      const p = pair.p.id;
      if (result.kind === 'ok') {
        health?.recordSuccess(p);
        this.deps.picker.recordPrefill?.(p, request);
        const answeredAt = performance.now();
        metrics.prefill((answeredAt - started) / 1000);
        this.#reservation.transferring();
        return { pair, kvTransferParams: result.kvTransferParams, answeredAt };
      }
      if (result.kind === 'aborted') throw this.stopForAbort(p);
      if (result.kind === 'rejected') {
        // P judged the request itself: another P would answer the same, and P is healthy.
        health?.recordSuccess(p);
        this.end('upstream_rejected', {
          kind: 'fail',
          code: 'prefill_rejected',
          detail: `prefill instance ${p} answered ${result.status}`,
        });
        throw new Stop(result.response);
      }
      health?.recordFailure(p);
      // Give the capacity back now: the next attempt may pick another pair, and backoff takes time.
      this.#reservation.end({ kind: 'fail', code: 'prefill_failed', detail: result.message });
      last = errors.upstreamFailed(result.message);
      failedP.add(p);
      if (attempt >= settings.maxRetries) throw this.fail('upstream_failed', last, { kind: 'none' });
      metrics.retried(result.reason);
    }
  }

  /**
   * Picks a pair and reserves its capacity. When the ledger finds an instance of the pair short,
   * the scheduler picks again without it (it could not know: text prompts are counted by estimate).
   */
  #place(failedP: ReadonlySet<number>, last: PdlinkError | undefined): { pair: PickedPair; request: PickRequest } {
    const shortP = new Set<number>();
    const shortD = new Set<number>();
    const refusals: string[] = [];
    for (let placement = 0; placement < MAX_PLACEMENTS; placement++) {
      const request: PickRequest = { excludeP: union(failedP, shortP), excludeD: shortD, ...promptFields(this.prompt) };
      const pair = this.#pick(request, shortP, last, refusals);
      const refused = this.#reserve(pair);
      if (refused === undefined) return { pair, request };
      refusals.push(refused.message);
      for (const id of shortInstances(pair, this.prompt.tokenCount, this.deps.ledger)) {
        if (id === pair.p.id) shortP.add(id);
        if (id === pair.d.id) shortD.add(id);
      }
    }
    throw this.fail('unavailable', errors.noPairWithRoom(refusals.join('; ')), { kind: 'none' });
  }

  #pick(request: PickRequest, shortP: ReadonlySet<number>, last: PdlinkError | undefined, refusals: readonly string[]): PickedPair {
    const { picker } = this.deps;
    let result = picker.pick(request);
    if (!result.ok && request.excludeP.size > shortP.size) {
      // Every P was tried: a transient failure may have passed, so try them again while retries remain.
      const again = picker.pick({ ...request, excludeP: shortP });
      if (again.ok) result = again;
    }
    if (result.ok) return result;
    if (last !== undefined) throw this.fail('upstream_failed', last, { kind: 'none' });
    if (refusals.length > 0) throw this.fail('unavailable', errors.noPairWithRoom(refusals.join('; ')), { kind: 'none' });
    throw this.fail('unavailable', errors.unavailable(result.message), { kind: 'none' });
  }

  /** Reserves the pair's capacity; returns the ledger's refusal when an instance is short, throws Stop on anything else. */
  #reserve(pair: PickedPair): PdlinkError | undefined {
    try {
      this.#reservation.take(pair, this.prompt.tokenCount);
      return undefined;
    } catch (err) {
      const known = err instanceof PdlinkError ? err : errors.internal(err);
      if (known.code === 'insufficient_capacity') return known;
      const outcome: ProxyOutcome = known.status === 503 ? 'unavailable' : known.status === 409 ? 'invalid' : 'internal';
      // A refused reservation leaves nothing to end; one taken but not begun is failed.
      throw this.fail(outcome, known, { kind: 'fail', code: 'reserve_failed', detail: known.message });
    }
  }

  async #attempt(pair: PickedPair): Promise<AttemptResult> {
    const { settings } = this.deps;
    const { kind, body, requestId, clientHeaders } = this.request;
    if (this.signal.aborted) return { kind: 'aborted' };
    this.#attemptTimer = this.#arm(settings.prefillTimeoutMs, 'prefill_timeout');
    const p = pair.p.id;
    try {
      const res = await sendLeg(
        engineUrl(pair.p, kind),
        legHeaders(clientHeaders, requestId),
        stringifyBody(prefillBody(body)),
        this.signal,
        this.deps.origins,
        () => this.deps.metrics.staleRetried('prefill'),
      );
      // Read the whole answer: it is small, and a drained body returns the connection to the pool.
      const text = await res.text();
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
      } catch {
        return { kind: 'retry', reason: 'bad_answer', message: `prefill instance ${p} answered ${res.status} without a JSON body` };
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
      if (this.#cause !== null) return { kind: 'aborted' };
      return { kind: 'retry', reason: 'transport', message: `prefill instance ${p} could not be reached: ${transportMessage(err)}` };
    } finally {
      this.#clearAttempt();
    }
  }

  #arm(ms: number, cause: AbortCause): ReturnType<typeof setTimeout> | undefined {
    if (!Number.isFinite(ms)) return undefined;
    const timer = setTimeout(() => this.abort(cause), ms);
    this.#timers.push(timer);
    return timer;
  }

  #clearFirstToken(): void {
    if (this.#firstTokenTimer !== undefined) clearTimeout(this.#firstTokenTimer);
    this.#firstTokenTimer = undefined;
  }

  #clearAttempt(): void {
    if (this.#attemptTimer !== undefined) clearTimeout(this.#attemptTimer);
    this.#attemptTimer = undefined;
  }
}

function promptFields(prompt: PromptInfo): { promptText?: string; promptTokens?: readonly number[] } {
  if (prompt.tokens !== undefined) return { promptTokens: prompt.tokens };
  if (prompt.text !== undefined) return { promptText: prompt.text };
  return {};
}
