/**
 * How the proxy answers when an engine fails: retries on another P, 4xx passed through, a D that
 * dies before or after its first byte, timeouts that abort the running leg. After every fault the
 * ledger is back to zero and nothing is left in flight.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import type { Behaviour, Responder } from './fixtures/proxy/fake-engine.ts';
import { decodeChunks, gate, prefillResponder } from './fixtures/proxy/responders.ts';
import { D_ID, P_ID, startHarness, type Harness } from './fixtures/proxy/harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const body = { model: 'test-model', prompt: 'Tell me a story', max_tokens: 16 };

/** A P responder whose very first answer, across every P sharing it, is `failure`. */
function failFirst(failure: Behaviour): Responder {
  let failed = false;
  return (request, engine) => {
    if (failed) return prefillResponder(request, engine);
    failed = true;
    return failure;
  };
}

interface ErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
}

describe('prefill failures', () => {
  test('P answers 500 once: the request is retried on the other P and succeeds', async () => {
    h = await startHarness({
      prefill: 2,
      prefillResponder: failFirst({ kind: 'json', status: 500, body: { error: { message: 'engine crashed' } } }),
    });
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'retry-1' });
    expect(res.status).toBe(200);
    await res.json();
    // Round robin sends the first attempt to one P; the retry must go to the other.
    const tried = [...h.ps[0]!.requests, ...h.ps[1]!.requests];
    expect(tried).toHaveLength(2);
    expect(h.ps[0]!.requests).toHaveLength(1);
    expect(h.ps[1]!.requests).toHaveLength(1);
    expect(tried.every((r) => r.headers['x-request-id'] === 'retry-1')).toBe(true);
    expect(h.ds[0]!.requests).toHaveLength(1);
    await h.settled();
    expect(await h.metric('pdlink_pd_retries_total', { reason: 'status_5xx' })).toBe(1);
    expect(h.ledger.totals().failed).toBe(1);
    expect(h.ledger.totals().done).toBe(1);
  });

  test('P unreachable: retried on the other P', async () => {
    h = await startHarness({ prefill: 2 });
    await h.ps[0]!.close();
    for (let i = 0; i < 2; i++) {
      const res = await h.post('/v1/completions', body);
      expect(res.status).toBe(200);
      await res.json();
    }
    // Round robin put one of the two first attempts on the closed P.
    expect(h.ps[1]!.requests).toHaveLength(2);
    const retries = await h.metric('pdlink_pd_retries_total', { reason: 'transport' });
    expect(retries).toBeGreaterThanOrEqual(1);
    expect(retries).toBeLessThanOrEqual(2);
    await h.settled();
  });

  test('P answers 400: the client gets P’s status and body as they are; D is never asked', async () => {
    h = await startHarness({ prefill: 2 });
    const answer = { object: 'error', message: 'prompt is too long', type: 'BadRequestError', code: 400 };
    h.ps[0]!.script.push({ kind: 'json', status: 400, body: answer });
    h.ps[1]!.script.push({ kind: 'json', status: 400, body: answer });
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'bad-1' });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-request-id')).toBe('bad-1');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual(answer);
    expect(h.ps[0]!.requests.length + h.ps[1]!.requests.length).toBe(1);
    expect(h.ds[0]!.requests).toHaveLength(0);
    await h.settled();
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'upstream_rejected' })).toBe(1);
  });

  test('every attempt fails: 502 with an OpenAI error body after max retries', async () => {
    h = await startHarness({
      prefill: 2,
      settings: { maxRetries: 3 },
      prefillResponder: () => ({ kind: 'json', status: 503, body: { error: 'overloaded' } }),
    });
    const res = await h.post('/v1/chat/completions', { model: 'test-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(502);
    const error = ((await res.json()) as ErrorBody).error;
    expect(error.type).toBe('server_error');
    expect(error.code).toBe('upstream_failed');
    expect(error.message).toContain('answered 503: overloaded');
    expect(h.ps[0]!.requests.length + h.ps[1]!.requests.length).toBe(4);
    expect(h.ds[0]!.requests).toHaveLength(0);
    await h.settled();
    expect(h.ledger.totals().failed).toBe(4);
  });

  test('P answers 200 without a JSON body: treated as a failed attempt and retried', async () => {
    h = await startHarness({
      prefill: 2,
      prefillResponder: failFirst({ kind: 'raw', status: 200, contentType: 'text/plain', body: 'not json' }),
    });
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(200);
    await res.json();
    expect(await h.metric('pdlink_pd_retries_total', { reason: 'bad_answer' })).toBe(1);
    await h.settled();
  });

  test('consecutive failures open P’s circuit: the scheduler stops sending to it', async () => {
    h = await startHarness({ prefill: 2, failureThreshold: 2, settings: { maxRetries: 1 } });
    h.ps[0]!.respond = () => ({ kind: 'json', status: 500, body: { error: 'down' } });
    for (let i = 0; i < 4; i++) {
      const res = await h.post('/v1/completions', body);
      expect(res.status).toBe(200);
      await res.json();
    }
    expect(h.scheduler.health.state(P_ID(0))).toBe('open');
    const before = h.ps[0]!.requests.length;
    for (let i = 0; i < 3; i++) await (await h.post('/v1/completions', body)).json();
    expect(h.ps[0]!.requests.length).toBe(before);
    await h.settled();
  });
});

describe('decode failures', () => {
  test('D closes the connection before its first byte: 502 with an error body, never a 200; D is reported', async () => {
    h = await startHarness({ failureThreshold: 1 });
    h.ds[0]!.script.push({ kind: 'destroy' });
    const res = await h.post('/v1/completions', { ...body, stream: true }, { 'x-request-id': 'd-dead' });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-request-id')).toBe('d-dead');
    const error = ((await res.json()) as ErrorBody).error;
    expect(error.code).toBe('upstream_failed');
    expect(error.message).toContain(`decode instance ${D_ID(0)}`);
    await h.settled();
    expect(h.transfer('d-dead')?.state).toBe('failed');
    expect(h.transfer('d-dead')?.code).toBe('decode_failed');
    expect(h.scheduler.health.state(D_ID(0))).toBe('open');
    expect(h.scheduler.health.state(P_ID(0))).toBe('closed');
  });

  test('D sends 200 headers, then dies before any body byte: still a 502', async () => {
    h = await startHarness();
    h.ds[0]!.script.push({ kind: 'stream', steps: [{ destroy: true }] });
    const res = await h.post('/v1/completions', { ...body, stream: true });
    expect(res.status).toBe(502);
    expect(((await res.json()) as ErrorBody).error.code).toBe('upstream_failed');
    await h.settled();
  });

  test('D answers 200 with an empty body: 502, not an empty 200', async () => {
    h = await startHarness();
    h.ds[0]!.script.push({ kind: 'raw', status: 200, contentType: 'application/json', body: '' });
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(502);
    expect(((await res.json()) as ErrorBody).error.message).toContain('empty body');
    await h.settled();
  });

  test('D answers 503: 502 naming D’s status and message', async () => {
    h = await startHarness();
    h.ds[0]!.script.push({ kind: 'json', status: 503, body: { error: { message: 'KV pull failed' } } });
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(502);
    expect(((await res.json()) as ErrorBody).error.message).toBe(`decode instance ${D_ID(0)} answered 503: KV pull failed`);
    await h.settled();
  });

  test('D answers 4xx: passed through as it is', async () => {
    h = await startHarness();
    h.ds[0]!.script.push({ kind: 'json', status: 422, body: { detail: 'bad sampling params' } });
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: 'bad sampling params' });
    await h.settled();
  });

  test('D dies mid-stream: the events so far, then one SSE error event, then the end', async () => {
    const dying = gate();
    let chunks: string[] = [];
    h = await startHarness({
      decodeResponder: (request, engine) => {
        chunks = decodeChunks(engine, request);
        // The second event is torn: D dies halfway through writing it.
        return {
          kind: 'stream',
          steps: [{ write: chunks[0]! }, { write: chunks[1]!.slice(0, 20) }, { wait: dying.promise }, { destroy: true }],
        };
      },
    });
    const res = await h.post('/v1/completions', { ...body, stream: true }, { 'x-request-id': 'mid' });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toBe(chunks[0]!);
    dying.open();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += decoder.decode(r.value);
    // The torn event is dropped; the error event stands in its place.
    expect(rest.startsWith('data: ')).toBe(true);
    expect(rest.endsWith('\n\n')).toBe(true);
    const event = JSON.parse(rest.slice('data: '.length)) as ErrorBody;
    expect(event.error.code).toBe('upstream_failed');
    expect(event.error.message).toContain('mid-stream');
    await h.settled();
    expect(h.transfer('mid')?.state).toBe('failed');
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'stream_failed' })).toBe(1);
  });
});

describe('timeouts', () => {
  test('P stalls: 504 after the prefill timeout, P’s connection is closed, D is never asked', async () => {
    h = await startHarness({ settings: { prefillTimeoutMs: 200 } });
    h.ps[0]!.script.push({ kind: 'stall' });
    const started = Date.now();
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(504);
    const error = ((await res.json()) as ErrorBody).error;
    expect(error.code).toBe('timeout');
    expect(error.message).toContain('did not answer within 200 ms');
    expect(Date.now() - started).toBeLessThan(200 + 2_000);
    await h.ps[0]!.requests[0]!.aborted;
    expect(h.ds[0]!.requests).toHaveLength(0);
    await h.settled();
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'timeout' })).toBe(1);
  });

  test('D stalls before its first byte: 504 after the first-token timeout, D’s connection is closed', async () => {
    h = await startHarness({ settings: { firstTokenTimeoutMs: 300 } });
    h.ds[0]!.script.push({ kind: 'stall' });
    const res = await h.post('/v1/chat/completions', { model: 'test-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(res.status).toBe(504);
    expect(((await res.json()) as ErrorBody).error.message).toContain('first_token_timeout');
    await h.ds[0]!.requests[0]!.aborted;
    await h.settled();
  });

  test('D stalls mid-stream: the infer timeout ends the stream with a timeout event and closes D’s connection', async () => {
    h = await startHarness({ settings: { inferTimeoutMs: 400 } });
    let first = '';
    h.ds[0]!.respond = (request, engine) => {
      first = decodeChunks(engine, request)[0]!;
      return { kind: 'stream', steps: [{ write: first }, { wait: new Promise(() => {}) }] };
    };
    const res = await h.post('/v1/completions', { ...body, stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.startsWith(first)).toBe(true);
    const event = JSON.parse(text.slice(first.length + 'data: '.length)) as ErrorBody;
    expect(event.error.code).toBe('timeout');
    expect(event.error.message).toContain('infer_timeout');
    await h.ds[0]!.requests[0]!.aborted;
    await h.settled();
  });
});
