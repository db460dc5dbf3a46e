import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { onError } from './envelope.ts';
import { UnsafeInteger } from '../core/exact-json.ts';
import { readJsonBody } from './body.ts';
import { MAX_JSON_DEPTH } from '../core/limits.ts';

function appWithLimit(limitBytes: number): Hono {
  const app = new Hono();
  app.onError(onError);
  app.post('/echo', async (c) => c.json({ body: await readJsonBody(c, { limitBytes }) }));
  return app;
}

const json = { 'content-type': 'application/json' };

describe('readJsonBody', () => {
  const app = appWithLimit(64);

  test('parses a JSON body', async () => {
    const res = await app.request('/echo', { method: 'POST', headers: json, body: '{"a":[1,2]}' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ body: { a: [1, 2] } });
  });

  test('accepts a charset parameter and +json media types', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/vnd.pdlink+json']) {
      const res = await app.request('/echo', { method: 'POST', headers: { 'content-type': type }, body: '{}' });
      expect(res.status).toBe(200);
    }
  });

  test('wrong or missing content type → 400 naming it', async () => {
    const res = await app.request('/echo', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; error_type: string };
    expect(body.error).toContain('content-type must be application/json');
    expect(body.error_type).toBe('UnsupportedMediaType');
    const none = await app.request('/echo', { method: 'POST', body: '{}' });
    expect(none.status).toBe(400);
  });

  test('empty body → 400', async () => {
    const res = await app.request('/echo', { method: 'POST', headers: json, body: '' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain('empty');
  });

  test('malformed JSON → 400 with the envelope', async () => {
    const res = await app.request('/echo', { method: 'POST', headers: json, body: '{"a":' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: 'request body is not valid JSON',
      error_type: 'BadRequest',
      issues: [{ path: '', message: 'malformed JSON' }],
    });
  });

  test('over the limit → 413, by declared length and by streamed bytes', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(100) });
    const declared = await app.request('/echo', { method: 'POST', headers: json, body: big });
    expect(declared.status).toBe(413);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big));
        controller.close();
      },
    });
    const streamed = await app.request('/echo', { method: 'POST', headers: json, body: stream, duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(((await streamed.json()) as { error_type: string }).error_type).toBe('PayloadTooLarge');
  });

  test('the limit counts UTF-8 bytes: multi-byte text under it in characters but over it in bytes → 413', async () => {
    // 28 characters, 64 bytes: at the limit, accepted; one more 3-byte character, refused.
    const at = JSON.stringify({ pad: '€'.repeat(18) });
    expect([at.length, Buffer.byteLength(at)]).toEqual([28, 64]);
    const fits = await app.request('/echo', { method: 'POST', headers: { 'content-type': 'application/json; charset=utf-8' }, body: at });
    expect(fits.status).toBe(200);
    const over = JSON.stringify({ pad: '€'.repeat(19) });
    const refused = await app.request('/echo', { method: 'POST', headers: json, body: new TextEncoder().encode(over) });
    expect(refused.status).toBe(413);
    // Without a declared length the bytes are counted as they stream in; the limit holds the same.
    const uncounted = new Request('http://x/echo', { method: 'POST', headers: json, body: over });
    uncounted.headers.delete('content-length');
    expect((await app.request(uncounted)).status).toBe(413);
  });

  test('a declared length smaller than the body does not get it past the limit', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(200) });
    const res = await app.request('/echo', { method: 'POST', headers: { ...json, 'content-length': '10' }, body: big });
    expect(res.status).toBe(413);
  });

  test(`nesting: ${MAX_JSON_DEPTH} levels are read, one more is a 400 naming the limit`, async () => {
    const roomy = appWithLimit(1 << 20);
    const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    const at = await roomy.request('/echo', { method: 'POST', headers: json, body: nested(MAX_JSON_DEPTH) });
    expect(at.status).toBe(200);
    for (const levels of [MAX_JSON_DEPTH + 1, 100_000]) {
      const res = await roomy.request('/echo', { method: 'POST', headers: json, body: nested(levels) });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: `request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels (at character ${MAX_JSON_DEPTH})`,
        error_type: 'BadRequest',
        issues: [{ path: '', message: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
      });
    }
  });

  test('nesting: brackets inside strings are text, however many', async () => {
    const roomy = appWithLimit(1 << 20);
    const body = JSON.stringify({ prompt: '['.repeat(100_000) });
    const res = await roomy.request('/echo', { method: 'POST', headers: json, body });
    expect(res.status).toBe(200);
  });

  test('integers beyond 2^53-1 become UnsafeInteger markers, never rounded values', async () => {
    const inner = new Hono();
    let seen: unknown;
    inner.post('/', async (c) => {
      seen = await readJsonBody(c, { limitBytes: 1024 });
      return c.body(null, 204);
    });
    await inner.request('/', { method: 'POST', headers: json, body: '{"id": 9007199254740993, "ok": 9007199254740991, "f": 1.5}' });
    const value = seen as { id: unknown; ok: unknown; f: unknown };
    expect(value.id).toBeInstanceOf(UnsafeInteger);
    expect((value.id as UnsafeInteger).source).toBe('9007199254740993');
    expect(value.ok).toBe(9007199254740991);
    expect(value.f).toBe(1.5);
  });
});

describe('onError', () => {
  test('an HTTP exception from elsewhere keeps its 4xx status and message', async () => {
    const app = new Hono();
    app.onError(onError);
    app.get('/big', () => {
      throw Object.assign(new Error('Payload Too Large'), { status: 413 });
    });
    app.get('/bad', () => {
      throw Object.assign(new Error('nope'), { status: 400 });
    });
    const big = await app.request('/big');
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ error: 'Payload Too Large', error_type: 'PayloadTooLarge' });
    const bad = await app.request('/bad');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toBe('nope');
  });
});

describe('a client that closes its connection mid-body', () => {
  /** A request whose body stream fails the way Bun fails it when the peer goes away. */
  function abandoned(headers: Record<string, string>): Request {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"instances": ['));
        controller.error(new DOMException('The connection was closed.', 'AbortError'));
      },
    });
    return new Request('http://pdlink.test/echo', { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
  }

  for (const [framing, headers] of [
    ['with a Content-Length', { ...json, 'content-length': '100000' }],
    ['chunked', json],
  ] as const) {
    test(`${framing}: client_closed, and the envelope logs it as one line without a stack`, async () => {
      const lines: unknown[][] = [];
      const warn = console.warn;
      const error = console.error;
      console.warn = (...args: unknown[]) => void lines.push(args);
      console.error = (...args: unknown[]) => void lines.push(args);
      try {
        const res = await appWithLimit(1 << 20).fetch(abandoned(headers));
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error_type: string }).error_type).toBe('ClientClosedRequest');
      } finally {
        console.warn = warn;
        console.error = error;
      }
      expect(lines).toEqual([['pdlink: POST /echo: the client closed the connection before the request body was complete']]);
    });
  }
});
