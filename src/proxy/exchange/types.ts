/**
 * The shapes the proxy's legs share with the exchange that runs them: the request, the deps, the
 * abort causes, what P's answer hands to D, and the narrow view each leg has of its exchange. They
 * live apart from exchange.ts so that the legs import types downward and only the exchange's callers
 * import the exchange itself.
 */
import type { PdlinkError } from '../../core/errors.ts';
import type { AbortScope } from '../legs/abort-scope.ts';
import type { ClientHeaders } from '../legs/legs.ts';
import type { CompletionBody, CompletionKind } from '../../schema/completions.ts';
import type { ProxyMetrics, ProxyOutcome } from '../telemetry/metrics.ts';
import type { BreakerReporter, PairPicker, PickedPair, PromptCapacity, ReservationLedger } from './ports.ts';
import type { PromptInfo } from './prompt.ts';
import type { LedgerEnd } from '../placement/reservation.ts';
import type { ProxySettings } from './settings.ts';
import type { Stop } from './stop.ts';
import type { ProxyTracing, RequestTrace } from '../telemetry/trace.ts';

export interface ExchangeRequest {
  readonly kind: CompletionKind;
  /** `api` label of the metrics. */
  readonly api: string;
  readonly body: CompletionBody;
  /** The client's `X-Request-Id` (or one made for it): sent on both legs and echoed to the client. */
  readonly requestId: string;
  /** Key of the request's ledger record, made by the proxy so that no client id can collide with it. */
  readonly transferId: string;
  readonly clientHeaders: ClientHeaders;
  /** Aborts when the client disconnects. */
  readonly clientSignal: AbortSignal;
  /** How admission let the request in (absent when admission is off), for its trace. */
  readonly admission?: AdmissionNote;
}

/** Admission's decision on a request, as its trace records it. */
export interface AdmissionNote {
  readonly tenant: string;
  readonly class: string;
  /** `immediate` (room at arrival) or `queued` (after waiting). */
  readonly how: string;
  readonly waitMs: number;
}

export interface ExchangeDeps {
  readonly picker: PairPicker;
  readonly ledger: ReservationLedger;
  /** The circuit breakers, told how each instance answered; optional. */
  readonly breakers: BreakerReporter | undefined;
  readonly metrics: ProxyMetrics;
  readonly settings: ProxySettings;
  /** Starts each request's trace; absent, tracing is off. */
  readonly tracing?: ProxyTracing;
  /** The largest prompt the instances can hold: a larger one is the client's error (400). Absent, not checked. */
  readonly capacity?: PromptCapacity;
  /** The prompt's token ids by the model's own tokenizer (tokenizer/), when there is one; asked once per request. */
  readonly tokenize?: (kind: CompletionKind, body: Readonly<Record<string, unknown>>) => readonly number[] | undefined;
}

/** `preempted`: admission cut the request, which had sent nothing yet, for a request of a higher class. */
export type AbortCause = 'client_abort' | 'prefill_timeout' | 'first_token_timeout' | 'infer_timeout' | 'preempted';

/** P answered: the pair, P's KV parameters for D, and when P answered (performance.now()). */
export interface Prefilled {
  readonly pair: PickedPair;
  readonly kvTransferParams: unknown;
  readonly answeredAt: number;
}

/** What every leg sees of its exchange: the request, the deps, the abort and its cause. */
export interface LegExchange {
  readonly request: ExchangeRequest;
  readonly deps: ExchangeDeps;
  readonly prompt: PromptInfo;
  /** The request's abort, which each leg's own controller follows. */
  readonly scope: AbortScope;
  /** The same abort as an AbortSignal, made on first use (backoff delays, SGLang's paired legs). */
  readonly signal: AbortSignal;
  readonly cause: AbortCause | null;
  readonly streaming: boolean;
  /** The request's trace (NO_TRACE when tracing is off). */
  readonly trace?: RequestTrace;
}

/** What the D leg sees of its exchange: a leg's view plus the calls that settle or abort it. */
export interface DecodeExchange extends LegExchange {
  abort(cause: AbortCause): void;
  firstByte(): void;
  end(outcome: ProxyOutcome, ledgerEnd: LedgerEnd): void;
  stopForAbort(instanceId: number | undefined): Stop;
  timeoutError(cause: AbortCause, instanceId: number | undefined): PdlinkError;
  fail(outcome: ProxyOutcome, err: PdlinkError, ledgerEnd: LedgerEnd): Stop;
}
