import { describe, expect, test } from 'bun:test';
import { ledgerFixture } from '../../test/doubles/ledger.ts';
import { createRegistry } from '../core/metrics.ts';
import type { PairPicker } from '../proxy/ports.ts';
import { proxyRoutes } from './inference.ts';
import { resolveProxySettings } from '../proxy/settings.ts';

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
