/**
 * Traces across both legs on a simulated cluster: the Coordinator, told an OTLP endpoint in
 * `pdlink.tracing`, exports each proxied request's spans to an in-process receiver. The span tree,
 * names and attributes are checked, and the engines' own records show that both legs carried a
 * `traceparent` of the request's trace, naming the leg's span.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { E2E_DEADLINE_MS, legsWhen, proxyPost, SimCluster, sseData, until } from './support/sim-cluster.ts';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.ts';

const MODEL = 'e2e-trace';
let cluster: SimCluster;
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = new OtlpReceiver();
  // The Coordinator inherits the environment: a short batch delay so spans arrive while the test waits.
  const before = process.env['OTEL_BSP_SCHEDULE_DELAY'];
  process.env['OTEL_BSP_SCHEDULE_DELAY'] = '100';
  try {
    cluster = await SimCluster.start({
      prefill: 1,
      decode: 1,
      model: MODEL,
      coordinatorConfig: { pdlink: { tracing: { otlp_endpoint: receiver.endpoint, service_name: 'pdlink-e2e' } } },
    });
  } finally {
    if (before === undefined) delete process.env['OTEL_BSP_SCHEDULE_DELAY'];
    else process.env['OTEL_BSP_SCHEDULE_DELAY'] = before;
  }
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  await receiver?.stop();
});

/** The spans of the request whose root carries `requestId`, once its root and `count` spans have arrived. */
async function requestSpans(requestId: string, count: number): Promise<ReceivedSpan[]> {
  let spans: ReceivedSpan[] = [];
  await until(
    async () => {
      const root = receiver.spans.find((s) => s.name === 'pdlink.request' && s.attributes['pdlink.request_id'] === requestId);
      spans = root === undefined ? [] : receiver.trace(root.traceId);
      return spans.length >= count ? true : undefined;
    },
    E2E_DEADLINE_MS,
    () => `${count} spans of ${requestId}, got ${spans.map((s) => s.name).join(', ')}`,
  );
  return spans;
}

function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0]!;
}

/** Trace id and parent span id of a `traceparent` value. */
function parent(traceparent: string | null): { traceId: string; spanId: string } {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(traceparent ?? '');
  if (match === null) throw new Error(`not a traceparent: ${traceparent}`);
  return { traceId: match[1]!, spanId: match[2]! };
}

const P = (): SimCluster['engines'][number] => cluster.engines.find((e) => e.role === 'prefill')!;
const D = (): SimCluster['engines'][number] => cluster.engines.find((e) => e.role === 'decode')!;

test("a streamed request continues the client's trace: request, schedule, prefill, kv_transfer, decode, first_token; both legs carry it", async () => {
  const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const clientSpan = '00f067aa0ba902b7';
  const id = 'trace-stream-1';
  const res = await cluster.fetch(`${cluster.proxyUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, traceparent: `00-${clientTrace}-${clientSpan}-01` },
    body: JSON.stringify({ model: MODEL, prompt: 'trace me across both legs please', max_tokens: 6, stream: true }),
  });
  expect(res.status).toBe(200);
  expect(sseData(await res.text()).at(-1)).toBe('[DONE]');

  const spans = await requestSpans(id, 6);
  expect(spans.map((s) => s.name).sort()).toEqual([
    'pdlink.decode',
    'pdlink.decode.first_token',
    'pdlink.kv_transfer',
    'pdlink.prefill',
    'pdlink.request',
    'pdlink.schedule',
  ]);
  const root = one(spans, 'pdlink.request');
  expect(root.traceId).toBe(clientTrace);
  expect(root.parentSpanId).toBe(clientSpan);
  expect(root.kind).toBe(2);
  expect(root.serviceName).toBe('pdlink-e2e');
  expect(root.attributes).toMatchObject({
    'pdlink.request_id': id,
    'pdlink.api': 'completions',
    'pdlink.p_instance': P().id,
    'pdlink.d_instance': D().id,
    'pdlink.outcome': 'ok',
  });
  expect(root.status.code).toBe(1);

  const schedule = one(spans, 'pdlink.schedule');
  const prefill = one(spans, 'pdlink.prefill');
  const kv = one(spans, 'pdlink.kv_transfer');
  const decode = one(spans, 'pdlink.decode');
  const firstToken = one(spans, 'pdlink.decode.first_token');
  for (const child of [schedule, prefill, kv, decode]) expect(child.parentSpanId).toBe(root.spanId);
  expect(firstToken.parentSpanId).toBe(decode.spanId);
  expect(schedule.attributes).toMatchObject({ 'pdlink.p_instance': P().id, 'pdlink.d_instance': D().id });
  expect(prefill.attributes).toMatchObject({ 'pdlink.instance_id': P().id, 'pdlink.leg.end': 'ok' });
  expect(prefill.kind).toBe(3);
  expect(decode.attributes).toMatchObject({ 'pdlink.instance_id': D().id, 'pdlink.leg.end': 'ok', 'http.response.status_code': 200 });
  expect(decode.kind).toBe(3);

  // Both engines saw a traceparent of the client's trace, each naming its own leg's span.
  const records = await legsWhen(cluster, id, (rs) => rs.length === 2 && rs.every((r) => r.outcome !== 'running'));
  const pRecord = records.find((r) => r.leg === 'prefill')!;
  const dRecord = records.find((r) => r.leg === 'decode')!;
  expect(parent(pRecord.traceparent)).toEqual({ traceId: clientTrace, spanId: prefill.spanId });
  expect(parent(dRecord.traceparent)).toEqual({ traceId: clientTrace, spanId: decode.spanId });
  // What D reported it pulled is on the KV transfer span.
  expect(dRecord.bytesPulled).toBeGreaterThan(0);
  expect(kv.attributes).toMatchObject({
    'pdlink.kv.bytes': dRecord.bytesPulled,
    'pdlink.kv.blocks': dRecord.blocks,
    'pdlink.kv.params_from_p': true,
    'pdlink.d_instance': D().id,
  });
  expect(receiver.contentTypes.every((t) => t.startsWith('application/json'))).toBe(true);
}, 60_000);

test('a whole answer without a client traceparent starts a new trace that both legs carry', async () => {
  const id = 'trace-whole-1';
  const res = await proxyPost(
    cluster,
    '/v1/chat/completions',
    { model: MODEL, messages: [{ role: 'user', content: 'hello traced' }], max_tokens: 4 },
    id,
  );
  expect(res.status).toBe(200);
  await res.text();
  const spans = await requestSpans(id, 6);
  const root = one(spans, 'pdlink.request');
  expect(root.parentSpanId).toBe('');
  expect(root.attributes).toMatchObject({ 'pdlink.request_id': id, 'pdlink.api': 'chat_completions', 'pdlink.outcome': 'ok' });
  const records = await legsWhen(cluster, id, (rs) => rs.length === 2 && rs.every((r) => r.outcome !== 'running'));
  const traceIds = records.map((r) => parent(r.traceparent).traceId);
  expect(traceIds).toEqual([root.traceId, root.traceId]);
  expect(new Set(records.map((r) => parent(r.traceparent).spanId))).toEqual(
    new Set([one(spans, 'pdlink.prefill').spanId, one(spans, 'pdlink.decode').spanId]),
  );
}, 60_000);

test('a request D rejects ends its trace in error with the outcome, the decode leg carrying D’s status', async () => {
  const id = 'trace-rejected-1';
  // More tokens than the model's context: P accepts the prompt, D refuses the generation.
  const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: 'too long an answer', max_tokens: 1_000_000 }, id);
  expect(res.status).toBe(400);
  await res.text();
  const spans = await requestSpans(id, 6);
  const root = one(spans, 'pdlink.request');
  expect(root.status).toEqual({ code: 2, message: 'upstream_rejected' });
  expect(root.attributes['pdlink.outcome']).toBe('upstream_rejected');
  expect(one(spans, 'pdlink.prefill').status.code).toBe(0);
  const decode = one(spans, 'pdlink.decode');
  expect(decode.attributes).toMatchObject({ 'http.response.status_code': 400, 'pdlink.leg.end': 'upstream_rejected' });
  expect(decode.status.code).toBe(2);
}, 60_000);
