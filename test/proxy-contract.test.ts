/**
 * The two-leg contract end to end over real sockets: what P and D receive, what the client gets
 * back, the shared request id, and connection reuse.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { PREFILL_KV_REQUEST } from '../src/proxy/legs/legs.ts';
import { decodeChunks, decodeJson, kvParamsOf } from './fixtures/proxy/responders.ts';
import { startHarness, type Harness } from './fixtures/proxy/harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const completion = { model: 'test-model', prompt: 'The capital of France is', max_tokens: 32, temperature: 0.2 };
const chat = {
  model: 'test-model',
  messages: [{ role: 'user', content: 'Say hello' }],
  max_completion_tokens: 40,
  min_tokens: 4,
  stream: true,
  stream_options: { include_usage: true },
};

describe('non-streaming completions', () => {
  test('returns exactly what D answered, with the client request id on both legs and the response', async () => {
    h = await startHarness();
    const res = await h.post('/v1/completions', completion, { 'x-request-id': 'client-id-1', authorization: 'Bearer secret' });
    const [p] = await h.ps[0]!.waitForRequests(1);
    const [d] = await h.ds[0]!.waitForRequests(1);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-request-id')).toBe('client-id-1');
    expect(await res.json()).toEqual(decodeJson(h.ds[0]!, d!));

    expect(p!.path).toBe('/v1/completions');
    expect(p!.headers['x-request-id']).toBe('client-id-1');
    expect(d!.headers['x-request-id']).toBe('client-id-1');
    expect(p!.headers['authorization']).toBe('Bearer secret');
    expect(d!.headers['authorization']).toBe('Bearer secret');
    expect(p!.body).toEqual({ ...completion, max_tokens: 1, stream: false, kv_transfer_params: { ...PREFILL_KV_REQUEST } });
    expect(d!.body).toEqual({ ...completion, kv_transfer_params: kvParamsOf(h.ps[0]!, p!) });
    await h.settled();
    expect(h.ledger.totals().done).toBe(1);
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'ok' })).toBe(1);
    expect(await h.sample('pdlink_pd_prefill_duration_seconds_count')).toBe(1);
    expect(await h.sample('pdlink_pd_decode_duration_seconds_count')).toBe(1);
    // Non-streaming D answers once: there is no first byte to time the transfer by.
    expect(await h.sample('pdlink_pd_kv_transfer_duration_seconds_count')).toBe(0);
    expect(await h.sample('pdlink_pd_requests_in_flight')).toBe(0);
  });

  test('generates one request id when the client sends none', async () => {
    h = await startHarness();
    const res = await h.post('/v1/chat/completions', { ...chat, stream: false });
    const [p] = await h.ps[0]!.waitForRequests(1);
    const [d] = await h.ds[0]!.waitForRequests(1);
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(p!.headers['x-request-id']).toBe(id!);
    expect(d!.headers['x-request-id']).toBe(id!);
    expect(await res.json()).toEqual(decodeJson(h.ds[0]!, d!));
  });

  test('integers beyond 2^53 in fields the proxy does not know reach both legs digit for digit', async () => {
    h = await startHarness();
    const text = '{"model":"test-model","prompt":"hi","seed":18446744073709551615,"logit_bias":{"42":-100}}';
    const res = await h.post('/v1/completions', text);
    expect(res.status).toBe(200);
    const [p] = await h.ps[0]!.waitForRequests(1);
    const [d] = await h.ds[0]!.waitForRequests(1);
    expect(p!.text).toContain('"seed":18446744073709551615');
    expect(d!.text).toContain('"seed":18446744073709551615');
    expect(d!.text).toContain('"logit_bias":{"42":-100}');
  });
});

describe('streaming', () => {
  test('chat: the client receives D’s SSE bytes exactly; P gets a one-token, non-streamed leg', async () => {
    h = await startHarness();
    const res = await h.post('/v1/chat/completions', chat, { 'x-request-id': 'stream-1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-request-id')).toBe('stream-1');
    const text = await res.text();
    const [p] = await h.ps[0]!.waitForRequests(1);
    const [d] = await h.ds[0]!.waitForRequests(1);
    expect(text).toBe(decodeChunks(h.ds[0]!, d!).join(''));

    expect(p!.path).toBe('/v1/chat/completions');
    expect(p!.body['stream']).toBe(false);
    expect(p!.body['max_tokens']).toBe(1);
    expect(p!.body['max_completion_tokens']).toBe(1);
    expect('stream_options' in p!.body).toBe(false);
    expect('min_tokens' in p!.body).toBe(false);
    expect(p!.body['kv_transfer_params']).toEqual({ ...PREFILL_KV_REQUEST });
    expect(p!.body['messages']).toEqual(chat.messages);

    // D gets the client's request as sent, with P's parameters verbatim.
    expect(d!.body).toEqual({ ...chat, kv_transfer_params: kvParamsOf(h.ps[0]!, p!) });
    expect(d!.headers['x-request-id']).toBe('stream-1');
    await h.settled();
    expect(h.transfer('stream-1')?.state).toBe('done');
    expect(await h.sample('pdlink_pd_kv_transfer_duration_seconds_count')).toBe(1);
    expect(await h.sample('pdlink_pd_decode_duration_seconds_count')).toBe(1);
  });

  test('completions: D’s chunks are relayed as they come, before D has finished', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    h = await startHarness({
      decodeResponder: (request, engine) => {
        const chunks = decodeChunks(engine, request);
        return { kind: 'stream', steps: [{ write: chunks[0]! }, { wait: hold }, ...chunks.slice(1).map((write) => ({ write }))] };
      },
    });
    const res = await h.post('/v1/completions', { ...completion, stream: true });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const [d] = await h.ds[0]!.waitForRequests(1);
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe(decodeChunks(h.ds[0]!, d!)[0]!);
    expect(h.proxy.inFlight()).toBe(1);
    release();
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toBe(decodeChunks(h.ds[0]!, d!).slice(1).join(''));
    await h.settled();
  });

  test('P’s kv_transfer_params reach D verbatim, whatever they hold', async () => {
    const odd = {
      remote_block_ids: [],
      remote_engine_id: 'e',
      remote_request_id: 'r',
      remote_host: '10.0.0.1',
      remote_port: 5600,
      tp_size: 2,
      extra: { nested: [1, null] },
    };
    h = await startHarness({ prefillResponder: () => ({ kind: 'json', body: { choices: [], kv_transfer_params: odd } }) });
    const res = await h.post('/v1/completions', { ...completion, stream: true });
    await res.text();
    const [d] = await h.ds[0]!.waitForRequests(1);
    expect(d!.body['kv_transfer_params']).toEqual(odd);
  });
});

describe('concurrency', () => {
  test('many requests at once each get their own D answer, and the ledger returns to zero', async () => {
    h = await startHarness({ prefill: 2, decode: 2 });
    const ids = Array.from({ length: 40 }, (_, i) => `c-${i}`);
    const texts = await Promise.all(
      ids.map(async (id, i) => {
        const res = await h!.post(
          i % 2 === 0 ? '/v1/completions' : '/v1/chat/completions',
          i % 2 === 0 ? { ...completion, stream: true } : chat,
          { 'x-request-id': id },
        );
        expect(res.status).toBe(200);
        return res.text();
      }),
    );
    const decoded = new Map(
      [...h.ds[0]!.requests.map((r) => [r, h!.ds[0]!] as const), ...h.ds[1]!.requests.map((r) => [r, h!.ds[1]!] as const)].map(([r, e]) => [
        r.headers['x-request-id'],
        decodeChunks(e, r).join(''),
      ]),
    );
    expect(decoded.size).toBe(ids.length);
    ids.forEach((id, i) => expect(texts[i]).toBe(decoded.get(id)!));
    expect(h.ds[0]!.requests.length).toBeGreaterThan(0);
    expect(h.ds[1]!.requests.length).toBeGreaterThan(0);
    await h.settled();
    expect(h.ledger.totals().done).toBe(ids.length);
  });
});

describe('connections', () => {
  test('sequential requests reuse one keep-alive connection per instance', async () => {
    h = await startHarness();
    for (let i = 0; i < 3; i++) {
      const res = await h.post('/v1/completions', { ...completion, stream: i % 2 === 0 });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      await h.settled();
    }
    expect(h.ps[0]!.requests).toHaveLength(3);
    expect(h.ds[0]!.requests).toHaveLength(3);
    expect(h.ps[0]!.connections).toBe(1);
    expect(h.ds[0]!.connections).toBe(1);
  });
});
