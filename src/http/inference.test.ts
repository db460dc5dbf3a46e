import { describe, expect, test } from 'bun:test';
import { ledgerFixture } from '../../test/doubles/ledger.ts';
import { createRegistry } from '../core/metrics.ts';
import type { PairPicker } from '../proxy/exchange/ports.ts';
import { proxyRoutes } from './inference.ts';
import { resolveProxySettings } from '../proxy/exchange/settings.ts';

const noPair: PairPicker = { pick: () => ({ ok: false, message: 'no decode instance is registered' }) };

function app(picker: PairPicker = noPair) {
  const { ledger } = ledgerFixture();
  const metrics = createRegistry();
  return {
    proxy: proxyRoutes({ scheduler: picker, ledger, metrics, settings: resolveProxySettings({}, { maxInFlight: 8 }) }),
    ledger,
    metrics,
  };
}

function post(proxy: ReturnType<typeof app>['proxy'], path: string, body: unknown, headers: Record<string, string> = {}) {
  return proxy.request(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

describe('proxyRoutes without sockets', () => {
  test('both APIs answer 503 in the OpenAI shape when the scheduler has no pair', async () => {
    const { proxy, ledger } = app();
    for (const [path, body] of [
      ['/v1/completions', { model: 'm', prompt: 'p' }],
      ['/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'x' }] }],
    ] as const) {
      const res = await post(proxy, path, body, { 'x-request-id': 'r' });
      expect(res.status).toBe(503);
      expect(res.headers.get('x-request-id')).toBe('r');
      expect(await res.json()).toEqual({
        error: { message: 'no decode instance is registered', type: 'server_error', code: 'unavailable', param: null },
      });
    }
    expect(proxy.inFlight()).toBe(0);
    expect(ledger.totals().active).toBe(0);
  });

  test('a scheduler that throws is a 500 without details, and the place in flight is given back', async () => {
    const { proxy } = app({
      pick: () => {
        throw new Error('bug');
      },
    });
    const original = console.error;
    console.error = () => {};
    try {
      const res = await post(proxy, '/v1/completions', { model: 'm', prompt: 'p' });
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBe('internal error');
    } finally {
      console.error = original;
    }
    expect(proxy.inFlight()).toBe(0);
  });

  test('only POST on the two paths', async () => {
    const { proxy } = app();
    expect((await proxy.request('/v1/completions')).status).toBe(404);
    expect((await post(proxy, '/v1/embeddings', {})).status).toBe(404);
  });

  test('outcomes are counted per API', async () => {
    const { proxy, metrics } = app();
    await post(proxy, '/v1/chat/completions', { model: 'm' });
    await post(proxy, '/v1/completions', { model: 'm', prompt: 'p' });
    const text = await metrics.metrics();
    expect(text).toContain('pdlink_pd_requests_total{api="chat_completions",outcome="invalid"} 1');
    expect(text).toContain('pdlink_pd_requests_total{api="completions",outcome="unavailable"} 1');
  });
});

test('the Coordinator mounts the proxy over its own scheduler, ledger and circuit breakers', async () => {
  const { createCoordinator } = await import('../apps/coordinator.ts');
  const coordinator = createCoordinator();
  const res = await coordinator.inferenceApp.request('/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"model":"m","prompt":"p"}',
  });
  expect(res.status).toBe(503);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unavailable');
  expect(await coordinator.metrics.metrics()).toContain('pdlink_pd_requests_total{api="completions",outcome="unavailable"} 1');
  await coordinator.close();
});

describe('answer: the routes without Hono', () => {
  const request = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    new Request(`http://127.0.0.1:1025${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const whole = async (res: Response) => ({ status: res.status, headers: [...res.headers], body: await res.text() });

  test.each([
    ['completions', '/v1/completions', { model: 'm', prompt: 'p' }, 503],
    ['chat', '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'x' }] }, 503],
    ['completions', '/v1/completions', { model: 'm' }, 400],
    ['completions', '/v1/completions', '{"model":', 400],
    ['chat', '/v1/chat/completions', { model: 'm', prompt: 'p' }, 400],
  ] as const)('%s %s %j: the route’s answer', async (kind, path, body, status) => {
    const viaApp = app();
    const viaAnswer = app();
    const routed = await whole(await viaApp.proxy.fetch(request(path, body, { 'x-request-id': 'same' })));
    const answered = await whole(await viaAnswer.proxy.answer(kind, request(path, body, { 'x-request-id': 'same' }), undefined));
    expect(answered).toEqual(routed);
    expect(answered.status).toBe(status);
    expect(viaAnswer.proxy.inFlight()).toBe(0);
    expect(await viaAnswer.metrics.metrics()).toEqual(await viaApp.metrics.metrics());
  });

  test('a refused X-Request-Id: the same 400, with a fresh id', async () => {
    const { proxy } = app();
    const res = await proxy.answer(
      'completions',
      request('/v1/completions', { model: 'm', prompt: 'p' }, { 'x-request-id': 'a b' }),
      undefined,
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('X-Request-Id');
  });

  test('an error the route lets out is answered as the app’s onError answers it: 500, the request id kept', async () => {
    /** A request whose abort signal cannot be read: the route throws past its own catches. */
    const broken = () => {
      const request = new Request('http://127.0.0.1:1025/v1/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'kept' },
        body: JSON.stringify({ model: 'm', prompt: 'p' }),
      });
      Object.defineProperty(request, 'signal', {
        get() {
          throw new Error('no signal');
        },
      });
      return request;
    };
    const original = console.error;
    console.error = () => {};
    try {
      const routed = await whole(await app().proxy.fetch(broken()));
      const answered = await whole(await app().proxy.answer('completions', broken(), undefined));
      expect(answered).toEqual(routed);
      expect(answered.status).toBe(500);
      expect(answered.headers).toContainEqual(['x-request-id', 'kept']);
    } finally {
      console.error = original;
    }
  });
});
