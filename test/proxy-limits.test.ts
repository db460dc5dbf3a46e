/**
 * Requests the proxy turns away or cuts short: no pair (503), over the in-flight limit (429),
 * bodies and headers it rejects (400/413), and clients that disconnect — which must abort
 * both legs and give the KV reservation back.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import * as net from 'node:net';
import { D_ID, P_ID, startHarness, until, type Harness } from './fixtures/proxy/harness.ts';
import { decodeChunks, gate } from './fixtures/proxy/responders.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const body = { model: 'test-model', prompt: 'Once upon a time', max_tokens: 8 };

interface ErrorBody {
  error: { message: string; type: string; code: string; param: string | null; issues?: { path: string; message: string }[] };
}

async function errorOf(res: Response): Promise<ErrorBody['error']> {
  return ((await res.json()) as ErrorBody).error;
}

describe('no pair', () => {
  test('no decode instance: 503 with an OpenAI error body and the request id', async () => {
    h = await startHarness({ prefill: 1, decode: 0 });
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'no-d' });
    expect(res.status).toBe(503);
    expect(res.headers.get('x-request-id')).toBe('no-d');
    const error = await errorOf(res);
    expect(error.type).toBe('server_error');
    expect(error.code).toBe('unavailable');
    expect(error.message.length).toBeGreaterThan(0);
    expect(h.ps[0]!.requests).toHaveLength(0);
    expect(h.idle()).toBe(true);
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'unavailable' })).toBe(1);
  });

  test('every instance removed by a refresh: 503', async () => {
    h = await startHarness();
    h.registry.apply({ ids: [], instances: [] });
    const res = await h.post('/v1/chat/completions', { model: 'test-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(503);
    expect((await errorOf(res)).code).toBe('unavailable');
  });
});

describe('capacity', () => {
  test('a prompt larger than any instance’s free KV blocks: 503, nothing sent, nothing held', async () => {
    // 4096 blocks of 16 tokens; 200 000 bytes of text are estimated at 66 667 tokens.
    h = await startHarness();
    const text = await h.post('/v1/completions', { ...body, prompt: 'x'.repeat(200_000) });
    expect(text.status).toBe(503);
    expect((await errorOf(text)).message).toContain('free blocks');
    const tokens = await h.post('/v1/completions', { ...body, prompt: Array.from({ length: 70_000 }, () => 7) });
    expect(tokens.status).toBe(503);
    expect(h.ps[0]!.requests).toHaveLength(0);
    expect(h.idle()).toBe(true);
  });

  // 3000 bytes of text are estimated at 1000 tokens, 63 blocks of 16: the scheduler, which counts no
  // blocks for text, may pick a D the ledger then finds short.
  const longText = { ...body, prompt: 'y'.repeat(3000) };

  /** Holds all but `free` of an instance's 4096 blocks, as other requests would. */
  function hog(harness: Harness, id: number, free: number): void {
    const half = (4096 - free) / 2;
    harness.ledger.reserve({ requestId: `hog-${id}`, p: id, d: id, pBlocks: half, dBlocks: half });
  }

  test('the ledger refuses the picked D: the scheduler picks again without it, and the request succeeds', async () => {
    h = await startHarness({ decode: 2 });
    hog(h, D_ID(0), 6);
    for (let i = 0; i < 4; i++) {
      const res = await h.post('/v1/completions', longText, { 'x-request-id': `roomy-${i}` });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    // Round robin offered D 20 again and again (more picks than requests); every request ran on D 21.
    const picks = (await h.metrics.getSingleMetric('pdlink_pd_pair_selections_total')!.get()).values.reduce((n, v) => n + v.value, 0);
    expect(picks).toBeGreaterThan(4);
    expect(h.ds[0]!.requests).toHaveLength(0);
    expect(h.ds[1]!.requests).toHaveLength(4);
    expect(h.ps[0]!.requests).toHaveLength(4);
    h.ledger.release(`hog-${D_ID(0)}`, 'cancelled');
    await h.settled();
    expect(h.ledger.totals()).toMatchObject({ done: 4, failed: 0 });
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'ok' })).toBe(4);
  });

  test('the ledger refuses the picked P: another P is picked, the D kept', async () => {
    h = await startHarness({ prefill: 2 });
    hog(h, P_ID(1), 6);
    for (let i = 0; i < 3; i++) {
      const res = await h.post('/v1/completions', longText);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    expect(h.ps[0]!.requests).toHaveLength(3);
    expect(h.ps[1]!.requests).toHaveLength(0);
    h.ledger.release(`hog-${P_ID(1)}`, 'cancelled');
    await h.settled();
  });

  test('no pair has room: 503 naming every refusal, nothing sent, nothing held', async () => {
    h = await startHarness({ decode: 2 });
    hog(h, D_ID(0), 6);
    hog(h, D_ID(1), 10);
    const res = await h.post('/v1/completions', longText, { 'x-request-id': 'no-room' });
    expect(res.status).toBe(503);
    expect(res.headers.get('x-request-id')).toBe('no-room');
    const error = await errorOf(res);
    expect(error.code).toBe('insufficient_capacity');
    expect(error.message).toContain('no instance pair has room for this request');
    expect(error.message).toContain(`instance ${D_ID(0)} has 6 free blocks, 63 requested`);
    expect(error.message).toContain(`instance ${D_ID(1)} has 10 free blocks, 63 requested`);
    expect(h.ps[0]!.requests).toHaveLength(0);
    expect(h.ledger.totals()).toMatchObject({ active: 2, done: 0, failed: 0 });
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'unavailable' })).toBe(1);
  });
});

describe('in-flight limit', () => {
  test('over max requests in flight: 429 until a place frees up', async () => {
    const release = gate();
    h = await startHarness({
      settings: { maxInFlight: 1 },
      decodeResponder: (request, engine) => ({
        kind: 'stream',
        steps: [...decodeChunks(engine, request).map((write) => ({ write })), { wait: release.promise }],
      }),
    });
    const first = await h.post('/v1/completions', { ...body, stream: true });
    expect(first.status).toBe(200);
    const second = await h.post('/v1/completions', body, { 'x-request-id': 'refused' });
    expect(second.status).toBe(429);
    expect(second.headers.get('x-request-id')).toBe('refused');
    const error = await errorOf(second);
    expect(error.type).toBe('rate_limit_error');
    expect(error.code).toBe('too_many_requests');
    expect(h.ps[0]!.requests).toHaveLength(1);
    release.open();
    await first.text();
    await h.settled();
    const third = await h.post('/v1/completions', { ...body, stream: true });
    expect(third.status).toBe(200);
    release.open();
    await third.text();
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'rejected' })).toBe(1);
  });
});

describe('rejected requests', () => {
  const cases: [string, string, unknown, string][] = [
    ['missing prompt', '/v1/completions', { model: 'm' }, 'prompt'],
    ['missing model', '/v1/completions', { prompt: 'p' }, 'model'],
    ['model not a string', '/v1/completions', { model: 3, prompt: 'p' }, 'model'],
    ['stream not a boolean', '/v1/completions', { model: 'm', prompt: 'p', stream: 'yes' }, 'stream'],
    ['max_tokens zero', '/v1/completions', { model: 'm', prompt: 'p', max_tokens: 0 }, 'max_tokens'],
    ['max_tokens fractional', '/v1/completions', { model: 'm', prompt: 'p', max_tokens: 1.5 }, 'max_tokens'],
    ['missing messages', '/v1/chat/completions', { model: 'm', prompt: 'p' }, 'messages'],
    ['messages not an array', '/v1/chat/completions', { model: 'm', messages: 'hi' }, 'messages'],
    ['body an array', '/v1/completions', [1, 2], ''],
  ];
  for (const [name, path, payload, field] of cases) {
    test(`${name}: 400 naming ${field === '' ? 'the body' : field}, no engine asked`, async () => {
      h ??= await startHarness();
      const res = await h.post(path, payload, { 'x-request-id': 'bad' });
      expect(res.status).toBe(400);
      expect(res.headers.get('x-request-id')).toBe('bad');
      const error = await errorOf(res);
      expect(error.type).toBe('invalid_request_error');
      expect(error.issues?.[0]?.path).toBe(field);
      if (field !== '') expect(error.param).toBe(field);
      expect(h.ps[0]!.requests).toHaveLength(0);
      expect(h.idle()).toBe(true);
    });
  }

  test('malformed JSON, wrong content type, empty body: 400; oversized: 413', async () => {
    h = await startHarness({ settings: { bodyLimitBytes: 1024 } });
    expect((await h.post('/v1/completions', '{"model":')).status).toBe(400);
    expect((await h.post('/v1/completions', '')).status).toBe(400);
    const plain = await fetch(`${h.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify(body),
    });
    expect(plain.status).toBe(400);
    expect((await errorOf(plain)).message).toContain('content-type');
    const big = await h.post('/v1/completions', { ...body, prompt: 'x'.repeat(2048) });
    expect(big.status).toBe(413);
    expect(h.ps[0]!.requests).toHaveLength(0);
    expect(h.idle()).toBe(true);
  });

  test('an X-Request-Id that cannot name a request: 400 naming the header', async () => {
    h = await startHarness();
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'x'.repeat(600) });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await errorOf(res)).param).toBe('X-Request-Id');
  });

  test('a request id already in flight: the second runs too, each under its own ledger key, the id forwarded unchanged', async () => {
    const release = gate();
    let decodes = 0;
    h = await startHarness({
      // The first answer is held open until the second request has ended.
      decodeResponder: (request, engine) => ({
        kind: 'stream',
        steps: [...decodeChunks(engine, request).map((write) => ({ write })), ...(decodes++ === 0 ? [{ wait: release.promise }] : [])],
      }),
    });
    const first = await h.post('/v1/completions', { ...body, stream: true }, { 'x-request-id': 'twice' });
    expect(first.status).toBe(200);
    const second = await h.post('/v1/completions', body, { 'x-request-id': 'twice' });
    expect(second.status).toBe(200);
    expect(second.headers.get('x-request-id')).toBe('twice');
    await second.arrayBuffer();
    const records = h.transfers('twice');
    expect(records.map((r) => r.state).sort()).toEqual(['done', 'transferring']);
    expect(new Set(records.map((r) => r.requestId)).size).toBe(2);
    expect(records.some((r) => r.requestId === 'twice')).toBe(false);
    release.open();
    expect(await first.text()).toContain('"text"');
    await h.settled();
    expect(h.transfers('twice').map((r) => r.state)).toEqual(['done', 'done']);
    // Both legs of both requests carried the client's id as sent.
    for (const engine of [h.ps[0]!, h.ds[0]!]) expect(engine.requests.map((r) => r.headers['x-request-id'])).toEqual(['twice', 'twice']);
  });

  test('without X-Request-Id the proxy makes one id: the answer, both legs and the ledger record share it', async () => {
    h = await startHarness();
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await h.settled();
    expect(h.transfer(id)).toMatchObject({ requestId: id, clientRequestId: id, state: 'done' });
    expect(h.ps[0]!.requests[0]!.headers['x-request-id']).toBe(id);
    expect(h.ds[0]!.requests[0]!.headers['x-request-id']).toBe(id);
  });
});

describe('client disconnect', () => {
  /** Sends a request on a raw socket and resolves with the socket once `marker` has been received. */
  function rawRequest(port: number, path: string, payload: unknown, marker: string): Promise<net.Socket> {
    const text = JSON.stringify(payload);
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(
          `POST ${path} HTTP/1.1\r\nhost: proxy\r\ncontent-type: application/json\r\nx-request-id: gone\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
        );
      });
      let received = '';
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString();
        if (received.includes(marker)) resolve(socket);
      });
    });
  }

  test('mid-stream: D’s leg is aborted, the reservation released, the request counted as client_abort', async () => {
    h = await startHarness({
      decodeResponder: (request, engine) => {
        const chunks = decodeChunks(engine, request);
        return { kind: 'stream', steps: [{ write: chunks[0]! }, { wait: new Promise(() => {}) }] };
      },
    });
    const socket = await rawRequest(h.port, '/v1/completions', { ...body, stream: true }, '"text"');
    expect(h.transfer('gone')?.state).toBe('transferring');
    socket.destroy();
    await h.ds[0]!.requests[0]!.aborted;
    await h.settled();
    expect(h.transfer('gone')?.state).toBe('released');
    expect(h.transfer('gone')?.code).toBe('client_abort');
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'client_abort' })).toBe(1);
    // D is not blamed for the client leaving.
    expect(h.scheduler.health.state(D_ID(0))).toBe('closed');
  });

  test('during prefill: P’s leg is aborted, D is never asked, the reservation released', async () => {
    h = await startHarness({ prefillResponder: () => ({ kind: 'stall' }) });
    const socket = net.connect(h.port, '127.0.0.1');
    socket.on('error', () => {});
    const text = JSON.stringify(body);
    socket.write(
      `POST /v1/completions HTTP/1.1\r\nhost: proxy\r\ncontent-type: application/json\r\nx-request-id: gone\r\ncontent-length: ${text.length}\r\n\r\n${text}`,
    );
    const [p] = await h.ps[0]!.waitForRequests(1);
    await until(() => h!.transfer('gone')?.state === 'prefilling', 'the reservation to be prefilling');
    socket.destroy();
    await p!.aborted;
    await h.settled();
    expect(h.transfer('gone')?.state).toBe('released');
    expect(h.ds[0]!.requests).toHaveLength(0);
  });
});
