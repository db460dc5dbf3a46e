/**
 * One proxied request from admission to the end of its response: pick a pair, reserve its KV
 * capacity, run the P leg (retrying on another P), then the D leg, and settle everything exactly
 * once whatever happens — the ledger record, the circuit-breaker reports, the metrics, the in-flight place.
 *
 * Every wait is bounded: a prefill attempt by `prefillTimeoutMs`, the first byte by
 * `firstTokenTimeoutMs`, the whole request by `inferTimeoutMs`. One AbortController covers the
 * request: a timeout, the client leaving or the end of the exchange aborts whatever leg is running.
 * The legs run in prefill.ts and decode.ts; this class owns the clocks, the abort and the settling.
 */
import { errors, PdlinkError } from '../../core/errors.ts';
import { AbortScope } from '../legs/abort-scope.ts';
import type { AttemptClock } from '../prefill/attempt.ts';
import { errorResponse } from './errors.ts';
import type { ProxyOutcome } from '../telemetry/metrics.ts';
import { runPrefill } from '../prefill/prefill.ts';
import { promptTooLarge } from '../placement/placement.ts';
import { promptOf, tokenizedPrompt, type PromptInfo } from './prompt.ts';
import { RequestReservation, type LedgerEnd } from '../placement/reservation.ts';
import { runDecode } from '../decode/decode.ts';
import { runSglang } from '../sglang/run.ts';
import { Stop } from './stop.ts';
import { NO_TRACING, type RequestTrace } from '../telemetry/trace.ts';
import type { AbortCause, DecodeExchange, ExchangeDeps, ExchangeRequest } from './types.ts';
import { requestDeadlines, type Deadline } from '../legs/deadlines.ts';

export type { AbortCause, ExchangeDeps, ExchangeRequest, Prefilled } from './types.ts';
export type { LedgerEnd } from '../placement/reservation.ts';
export { Stop } from './stop.ts';

export class Exchange implements DecodeExchange {
  readonly request: ExchangeRequest;
  readonly deps: ExchangeDeps;
  readonly prompt: PromptInfo;
  readonly trace: RequestTrace;
  readonly #scope = new AbortScope();
  readonly #onEnd: () => void;
  readonly #onClientAbort = (): void => this.abort('client_abort');
  #cause: AbortCause | null = null;
  #ended = false;
  /** D's first byte arrived: from here on the client may be receiving the answer. */
  #answering = false;
  readonly #reservation: RequestReservation;
  #timers: Deadline[] = [];
  #firstTokenTimer: Deadline | undefined;
  #attemptTimer: Deadline | undefined;
  readonly #attemptClock: AttemptClock = {
    start: () => {
      this.#attemptTimer = this.#arm(this.deps.settings.prefillTimeoutMs, 'prefill_timeout');
    },
    stop: () => this.#clearAttempt(),
  };

  /**
   * Starts the request's clocks; `onEnd` runs once when the exchange has settled.
   * @example const response = await new Exchange(request, deps, () => limit.release()).run();
   */
  constructor(request: ExchangeRequest, deps: ExchangeDeps, onEnd: () => void) {
    this.request = request;
    this.deps = deps;
    this.#onEnd = onEnd;
    this.prompt = tokenizedPrompt(promptOf(request.kind, request.body), deps.tokenize?.(request.kind, request.body));
    deps.metrics.requestSized(this.prompt.tokenCount, askedOutputTokens(request.body));
    this.trace = (deps.tracing ?? NO_TRACING).start(request);
    const { settings } = deps;
    this.#reservation = new RequestReservation(deps.ledger, request.transferId, settings.leaseMs, request.requestId);
    this.#firstTokenTimer = this.#arm(settings.firstTokenTimeoutMs, 'first_token_timeout');
    this.#arm(settings.inferTimeoutMs, 'infer_timeout');
    if (request.clientSignal.aborted) this.abort('client_abort');
    else request.clientSignal.addEventListener('abort', this.#onClientAbort, { once: true });
  }

  /** The request's abort: a timeout, the client leaving or the end of the exchange. */
  get scope(): AbortScope {
    return this.#scope;
  }

  /** The request's abort as an AbortSignal, made on first use. */
  get signal(): AbortSignal {
    return this.#scope.signal;
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
      const tooLarge = promptTooLarge(this.prompt, this.request.kind, this.deps.capacity);
      if (tooLarge !== undefined) throw this.fail('invalid', tooLarge, { kind: 'none' });
      if (this.deps.settings.protocol === 'sglang') {
        return await runSglang(this, { reservation: this.#reservation, attemptClock: this.#attemptClock });
      }
      const prefilled = await runPrefill(this, { reservation: this.#reservation, attemptClock: this.#attemptClock });
      if (!this.streaming) this.#clearFirstToken();
      return await runDecode(this, prefilled, (d) => this.#reservation.moveDecode(d, this.prompt.tokenCount));
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
    this.#scope.abort(cause);
  }

  /**
   * Cuts the request for one of a higher class (admission's preemption) if nothing of its answer can
   * have reached the client yet: D has not sent a byte and the exchange has not settled. True when cut;
   * the request then answers 503 and its capacity is given back, charged to no instance.
   * @example if (exchange.preempt()) cuts++;
   */
  preempt(): boolean {
    if (this.#answering || this.#ended || this.#cause !== null) return false;
    this.abort('preempted');
    return true;
  }

  /** The first byte of D's answer arrived: the first-token clock stops. */
  firstByte(): void {
    this.#answering = true;
    this.#clearFirstToken();
    this.trace.firstByte();
  }

  /**
   * Settles the exchange once: stops the clocks, ends the ledger record, counts the outcome.
   * @example exchange.end('ok', { kind: 'complete' });
   */
  end(outcome: ProxyOutcome, ledgerEnd: LedgerEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const timer of this.#timers) requestDeadlines.cancel(timer);
    this.#clearAttempt();
    this.request.clientSignal.removeEventListener('abort', this.#onClientAbort);
    this.#reservation.end(ledgerEnd);
    this.#reservation.close();
    // Anything still running (a body being read after a failure) has no reader any more.
    if (outcome !== 'ok') this.#scope.abort(this.#cause ?? 'ended');
    this.deps.metrics.requestEnded(this.request.api, outcome);
    this.trace.end(outcome);
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
    if (cause === 'preempted') {
      // Admission's choice, not the instance's fault: no breaker hears of it.
      const err = errors.admissionRefused('preempted', 'cut for a request of a higher priority class before it answered; retry later');
      this.end('preempted', { kind: 'fail', code: 'preempted', detail: err.message });
      return new Stop(errorResponse(err, this.request.requestId));
    }
    if (instanceId !== undefined) this.deps.breakers?.recordFailure(instanceId);
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

  #arm(ms: number, cause: AbortCause): Deadline | undefined {
    const timer = requestDeadlines.arm(ms, () => this.abort(cause));
    if (timer !== undefined) this.#timers.push(timer);
    return timer;
  }

  #clearFirstToken(): void {
    requestDeadlines.cancel(this.#firstTokenTimer);
    this.#firstTokenTimer = undefined;
  }

  #clearAttempt(): void {
    requestDeadlines.cancel(this.#attemptTimer);
    this.#attemptTimer = undefined;
  }
}

/** The output tokens a request asks for: `max_tokens` (or chat's `max_completion_tokens`), 0 when it names none. */
function askedOutputTokens(body: Readonly<Record<string, unknown>>): number {
  const n = body['max_tokens'] ?? body['max_completion_tokens'];
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : 0;
}
