import { describe, expect, test } from 'bun:test';
import type { ClientHeaders } from '../legs/legs.ts';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Instance } from '../../cluster/instance.ts';
import type { CompletionBody } from '../../schema/completions.ts';
import { OtelTracing, SPAN } from './otel-trace.ts';
import type { PickedPair } from '../exchange/ports.ts';
import type { ExchangeRequest } from '../exchange/types.ts';

function requestOf(clientHeaders: ClientHeaders = {}): ExchangeRequest {
  return {
    kind: 'completions',
    api: 'completions',
    body: { model: 'm', prompt: 'p' } as CompletionBody,
    requestId: 'r-1',
    transferId: 't-1',
    clientHeaders,
    clientSignal: new AbortController().signal,
  };
}

function pairOf(p: number, d: number): PickedPair {
  const instance = (id: number): Instance => ({ id, ip: `127.0.0.${id % 250}`, port: 1025 }) as unknown as Instance;
  return { p: instance(p), d: instance(d) } as PickedPair;
}

function traced() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracing = new OtelTracing(provider.getTracer('test'));
  const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);
  return { tracing, spans, all: () => exporter.getFinishedSpans() };
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

describe('tracing on', () => {
  test('a D that fails before its first byte: its decode span ends in error, the next D gets its own span and traceparent', () => {
    const { tracing, spans, all } = traced();
    const trace = tracing.start(requestOf());
    trace.scheduling();
    trace.placed(pairOf(1, 2));
    const pHeaders: Record<string, string> = {};
    trace.prefillSent(pairOf(1, 2), pHeaders);
    trace.prefillEnded('ok', { remote_block_ids: [1] });
    const d1: Record<string, string> = {};
    trace.decodeSent(pairOf(1, 2), d1);
    trace.decodeAnswered(503, new Headers());
    const d2: Record<string, string> = {};
    trace.decodeSent(pairOf(1, 3), d2);
    trace.decodeAnswered(200, new Headers({ 'x-kv-transfer-bytes': '4096', 'x-kv-transfer-blocks': '2' }));
    trace.firstByte();
    trace.end('ok');

    const root = spans(SPAN.request)[0]!;
    expect(root.attributes).toMatchObject({ 'pdlink.p_instance': 1, 'pdlink.d_instance': 3, 'pdlink.outcome': 'ok' });
    const decodes = spans(SPAN.decode);
    expect(decodes.map((s) => [s.attributes['pdlink.instance_id'], s.attributes['pdlink.leg.end'], s.status.code])).toEqual([
      [2, 'retry', 2],
      [3, 'ok', 0],
    ]);
    expect(spans(SPAN.firstToken).map((s) => s.status.code)).toEqual([2, 0]);
    const kv = spans(SPAN.kvTransfer);
    expect(kv).toHaveLength(1);
    expect(kv[0]!.attributes).toMatchObject({ 'pdlink.kv.bytes': 4096, 'pdlink.kv.blocks': 2, 'pdlink.d_instance': 3 });
    // Each leg names its own span, all in the request's one trace.
    const ids = [pHeaders, d1, d2].map((h) => TRACEPARENT.exec(h['traceparent'] ?? '')!);
    expect(new Set(ids.map((m) => m[1]))).toEqual(new Set([root.spanContext().traceId]));
    expect(ids.map((m) => m[2])).toEqual([spans(SPAN.prefill)[0]!.spanContext().spanId, ...decodes.map((s) => s.spanContext().spanId)]);
    expect(all().every((s) => s.spanContext().traceId === root.spanContext().traceId)).toBe(true);
  });

  test('a P that fails is one failed prefill span; the KV transfer starts only at the P that answered', () => {
    const { tracing, spans } = traced();
    const trace = tracing.start(requestOf());
    trace.placed(pairOf(1, 2));
    trace.prefillSent(pairOf(1, 2), {});
    trace.prefillEnded('retry');
    expect(spans(SPAN.kvTransfer)).toHaveLength(0);
    trace.placed(pairOf(4, 2));
    trace.prefillSent(pairOf(4, 2), {});
    trace.prefillEnded('ok', undefined);
    trace.end('timeout');
    expect(spans(SPAN.prefill).map((s) => [s.attributes['pdlink.instance_id'], s.status.code])).toEqual([
      [1, 2],
      [4, 0],
    ]);
    expect(spans(SPAN.schedule)).toHaveLength(2);
    // Still open when the request timed out: ended with the outcome.
    const kv = spans(SPAN.kvTransfer)[0]!;
    expect(kv.attributes['pdlink.kv.params_from_p']).toBe(false);
    expect(kv.status).toEqual({ code: 2, message: 'timeout' });
    expect(spans(SPAN.request)[0]!.status).toEqual({ code: 2, message: 'timeout' });
  });

  test("a client's traceparent is continued; a malformed one starts a new trace", () => {
    const { tracing, spans } = traced();
    const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    tracing.start(requestOf({ traceparent: `00-${clientTrace}-00f067aa0ba902b7-01` })).end('ok');
    tracing.start(requestOf({ traceparent: 'not-a-traceparent' })).end('ok');
    const [continued, fresh] = spans(SPAN.request);
    expect(continued!.spanContext().traceId).toBe(clientTrace);
    expect(continued!.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(fresh!.spanContext().traceId).not.toBe(clientTrace);
    expect(fresh!.parentSpanContext).toBeUndefined();
  });
});

describe('admission on the request span', () => {
  test('the tenant, the class, how the request got in and its wait are attributes of pdlink.request', () => {
    const { tracing, spans } = traced();
    tracing.start({ ...requestOf(), admission: { tenant: 'chat', class: 'interactive', how: 'queued', waitMs: 42 } }).end('ok');
    expect(spans(SPAN.request)[0]!.attributes).toMatchObject({
      'pdlink.admission.tenant': 'chat',
      'pdlink.admission.class': 'interactive',
      'pdlink.admission.decision': 'queued',
      'pdlink.admission.wait_ms': 42,
    });
    tracing.start(requestOf()).end('ok');
    expect(Object.keys(spans(SPAN.request)[1]!.attributes).some((k) => k.startsWith('pdlink.admission'))).toBe(false);
  });
});
