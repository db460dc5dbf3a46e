/**
 * The spans of one proxied request, recorded with OpenTelemetry when tracing is on. The request is
 * one trace (continuing the client's `traceparent` when it sent one): a `pdlink.request` span from
 * admission to the end, and under it `pdlink.schedule` (each pair choice), `pdlink.prefill` (each P
 * attempt), `pdlink.kv_transfer` (from P's answer to D's first byte: the pull D does on its own,
 * seen from the ends the proxy sees, with the KV report D sends in its headers), `pdlink.decode` (the
 * D leg to its end) and `pdlink.decode.first_token` (the D leg to its first byte). Each leg carries
 * the `traceparent` of its own span, so an engine that traces joins the same trace.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { kvMovedOf } from '../../core/kv-report.ts';
import type { ClientHeaders, LegHeaders } from '../legs/legs.ts';
import type { ProxyOutcome } from './metrics.ts';
import type { PickedPair } from '../exchange/ports.ts';
import type { LegEnd, ProxyTracing, RequestTrace, TracedRequest } from './trace.ts';

const propagator = new W3CTraceContextPropagator();

/** Reads `traceparent`/`tracestate` from the client's Headers. */
const headerCarrier = {
  get: (carrier: ClientHeaders, key: string): string | undefined => carrier[key as keyof ClientHeaders],
  keys: (carrier: ClientHeaders): string[] => Object.keys(carrier),
};

/** Writes them into a leg's headers. */
const legCarrier = {
  set: (carrier: LegHeaders, key: string, value: string): void => {
    carrier[key] = value;
  },
};

/** Span and attribute names, shared with the tests and the README. */
export const SPAN = {
  request: 'pdlink.request',
  schedule: 'pdlink.schedule',
  prefill: 'pdlink.prefill',
  kvTransfer: 'pdlink.kv_transfer',
  decode: 'pdlink.decode',
  firstToken: 'pdlink.decode.first_token',
} as const;

/** Tracing on: each request records its spans with `tracer`. */
export class OtelTracing implements ProxyTracing {
  readonly #tracer: Tracer;

  /**
   * @example const tracing = new OtelTracing(provider.getTracer('pdlink'));
   */
  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  start(request: TracedRequest): RequestTrace {
    return new OtelRequestTrace(this.#tracer, request);
  }
}

class OtelRequestTrace implements RequestTrace {
  readonly #tracer: Tracer;
  readonly #root: Span;
  readonly #context: Context;
  #scheduleStart = 0;
  #prefill: Span | undefined;
  #kvTransfer: Span | undefined;
  #decode: Span | undefined;
  #firstToken: Span | undefined;

  constructor(tracer: Tracer, request: TracedRequest) {
    this.#tracer = tracer;
    const parent =
      request.clientHeaders.traceparent !== undefined
        ? propagator.extract(ROOT_CONTEXT, request.clientHeaders, headerCarrier)
        : ROOT_CONTEXT;
    this.#root = tracer.startSpan(
      SPAN.request,
      { kind: SpanKind.SERVER, attributes: { 'pdlink.request_id': request.requestId, 'pdlink.api': request.api } },
      parent,
    );
    this.#context = trace.setSpan(ROOT_CONTEXT, this.#root);
    const admitted = request.admission;
    if (admitted !== undefined)
      this.#root.setAttributes({
        'pdlink.admission.tenant': admitted.tenant,
        'pdlink.admission.class': admitted.class,
        'pdlink.admission.decision': admitted.how,
        'pdlink.admission.wait_ms': admitted.waitMs,
      });
  }

  scheduling(): void {
    this.#scheduleStart = performance.now();
  }

  placed(pair: PickedPair): void {
    const ids = { 'pdlink.p_instance': pair.p.id, 'pdlink.d_instance': pair.d.id };
    this.#tracer.startSpan(SPAN.schedule, { startTime: this.#scheduleStart, attributes: ids }, this.#context).end();
    this.#root.setAttributes(ids);
  }

  prefillSent(pair: PickedPair, headers: LegHeaders): void {
    this.#prefill = this.#leg(SPAN.prefill, pair.p.id, pair.p.ip, headers);
  }

  prefillEnded(end: LegEnd, kvTransferParams?: unknown): void {
    const span = this.#prefill;
    if (span === undefined) return;
    this.#prefill = undefined;
    span.setAttribute('pdlink.leg.end', end);
    if (end !== 'ok' && end !== 'rejected') span.setStatus({ code: SpanStatusCode.ERROR, message: end });
    span.end();
    if (end !== 'ok') return;
    // P's answer is where the KV transfer can start: D pulls P's blocks once it has the leg.
    this.#kvTransfer = this.#tracer.startSpan(
      SPAN.kvTransfer,
      { attributes: { 'pdlink.kv.params_from_p': kvTransferParams !== undefined } },
      this.#context,
    );
  }

  decodeSent(pair: PickedPair, headers: LegHeaders): void {
    // A D that failed before its first byte hands the leg on: its span ends here.
    this.#endDecode('retry');
    this.#root.setAttribute('pdlink.d_instance', pair.d.id);
    this.#kvTransfer?.setAttribute('pdlink.d_instance', pair.d.id);
    this.#decode = this.#leg(SPAN.decode, pair.d.id, pair.d.ip, headers);
    this.#firstToken = this.#tracer.startSpan(
      SPAN.firstToken,
      { attributes: { 'pdlink.d_instance': pair.d.id } },
      trace.setSpan(ROOT_CONTEXT, this.#decode),
    );
  }

  decodeAnswered(status: number, headers: Pick<Headers, 'get'>): void {
    this.#decode?.setAttribute('http.response.status_code', status);
    const moved = kvMovedOf(headers);
    if (moved.bytes !== undefined) this.#kvTransfer?.setAttribute('pdlink.kv.bytes', moved.bytes);
    if (moved.blocks !== undefined) this.#kvTransfer?.setAttribute('pdlink.kv.blocks', moved.blocks);
  }

  firstByte(): void {
    this.#firstToken?.end();
    this.#firstToken = undefined;
    this.#kvTransfer?.end();
    this.#kvTransfer = undefined;
  }

  end(outcome: ProxyOutcome): void {
    // A whole (not streamed) answer has no first byte apart from its end.
    if (outcome === 'ok') this.firstByte();
    this.#endOpen(this.#prefill, outcome);
    this.#prefill = undefined;
    this.#endOpen(this.#kvTransfer, outcome);
    this.#kvTransfer = undefined;
    this.#endOpen(this.#firstToken, outcome);
    this.#firstToken = undefined;
    this.#endDecode(outcome);
    this.#root.setAttribute('pdlink.outcome', outcome);
    this.#root.setStatus(outcome === 'ok' ? { code: SpanStatusCode.OK } : { code: SpanStatusCode.ERROR, message: outcome });
    this.#root.end();
  }

  #leg(name: string, instanceId: number, ip: string, headers: LegHeaders): Span {
    const span = this.#tracer.startSpan(
      name,
      { kind: SpanKind.CLIENT, attributes: { 'pdlink.instance_id': instanceId, 'server.address': ip } },
      this.#context,
    );
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, legCarrier);
    return span;
  }

  #endDecode(outcome: string): void {
    this.#endOpen(this.#firstToken, outcome);
    this.#firstToken = undefined;
    const span = this.#decode;
    if (span === undefined) return;
    this.#decode = undefined;
    span.setAttribute('pdlink.leg.end', outcome);
    if (outcome !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    span.end();
  }

  /** Ends a span still open when the request settled; anything but 'ok' marks it failed. */
  #endOpen(span: Span | undefined, outcome: string): void {
    if (span === undefined) return;
    if (outcome !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    span.end();
  }
}
