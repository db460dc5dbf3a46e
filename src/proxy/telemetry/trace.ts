/**
 * The proxy's view of tracing: one RequestTrace per proxied request, told where the request is
 * (scheduled, each leg sent and answered, D's first byte, the end). Tracing is off unless an OTLP
 * endpoint is configured, and then the proxy holds NO_TRACING, whose requests all share NO_TRACE:
 * every hook is an empty method on one shared object, so a request with tracing off creates no
 * span, reads no clock and allocates nothing for tracing. The choice is made once, when the proxy
 * is built (see otel-trace.ts for the tracing that records spans).
 */
import type { ClientHeaders, LegHeaders } from '../legs/legs.ts';
import type { ProxyOutcome } from './metrics.ts';
import type { PickedPair } from '../exchange/ports.ts';

/** Why a leg ended, as the trace records it. */
export type LegEnd = 'ok' | 'rejected' | 'retry' | 'aborted';

/** The hooks of one request's trace, called in the order the request goes. */
export interface RequestTrace {
  /** A placement (pair choice and ledger reservation) starts. */
  scheduling(): void;
  /** The placement chose `pair`. */
  placed(pair: PickedPair): void;
  /** The P leg is about to be sent to `pair.p` with `headers`: its `traceparent` is added there. */
  prefillSent(pair: PickedPair, headers: LegHeaders): void;
  /** P's attempt ended; on 'ok', `kvTransferParams` is what P handed over for D. */
  prefillEnded(end: LegEnd, kvTransferParams?: unknown): void;
  /** The D leg is about to be sent to `pair.d` with `headers`: its `traceparent` is added there. */
  decodeSent(pair: PickedPair, headers: LegHeaders): void;
  /** D answered with this status and headers (its KV report is read from them). */
  decodeAnswered(status: number, headers: Pick<Headers, 'get'>): void;
  /** D's first byte reached the proxy. */
  firstByte(): void;
  /** The request settled with `outcome`. */
  end(outcome: ProxyOutcome): void;
}

/** What a trace reads of its request (a part of ExchangeRequest). */
export interface TracedRequest {
  readonly requestId: string;
  /** `api` label of the metrics. */
  readonly api: string;
  /** The client's headers the proxy kept: its `traceparent`, when tracing is on. */
  readonly clientHeaders: ClientHeaders;
  /** How admission let it in, when admission is on. */
  readonly admission?: { readonly tenant: string; readonly class: string; readonly how: string; readonly waitMs: number };
}

/** Starts the trace of each request. */
export interface ProxyTracing {
  start(request: TracedRequest): RequestTrace;
}

function nothing(): void {}

/** The trace of every request while tracing is off: one frozen object whose hooks do nothing. */
export const NO_TRACE: RequestTrace = Object.freeze({
  scheduling: nothing,
  placed: nothing,
  prefillSent: nothing,
  prefillEnded: nothing,
  decodeSent: nothing,
  decodeAnswered: nothing,
  firstByte: nothing,
  end: nothing,
});

/** Tracing off: every request gets NO_TRACE. */
export const NO_TRACING: ProxyTracing = Object.freeze({ start: (): RequestTrace => NO_TRACE });
