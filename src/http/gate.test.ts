import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { type Gate, gateMiddleware } from './gate.ts';

describe('gateMiddleware', () => {
  test('a refusal answers in place of the route; undefined lets the route answer', async () => {
    const seen: { path: string; env: unknown }[] = [];
    const gate: Gate = (request, env, path) => {
      seen.push({ path, env });
      return request.headers.get('x-let-in') === 'yes' ? undefined : new Response('refused', { status: 403 });
    };
    const app = new Hono();
    app.use('*', gateMiddleware(gate));
    app.post('/v1/completions', (c) => c.text('routed'));
    const env = { marker: 1 };
    const refused = await app.fetch(new Request('http://h/v1/completions?x=1', { method: 'POST' }), env);
    expect([refused.status, await refused.text()]).toEqual([403, 'refused']);
    const passed = await app.fetch(new Request('http://h/v1/completions', { method: 'POST', headers: { 'x-let-in': 'yes' } }), env);
    expect([passed.status, await passed.text()]).toEqual([200, 'routed']);
    // The router's path (no query) and the runtime's env reach the gate.
    expect(seen).toEqual([
      { path: '/v1/completions', env },
      { path: '/v1/completions', env },
    ]);
  });
});
