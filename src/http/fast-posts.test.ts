import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { fastFetch, gatedPosts, mountPosts, type FastPost } from './fast-posts.ts';
import { gateMiddleware, type Gate } from './gate.ts';

const posts: FastPost[] = [
  { path: '/v1/a', answer: async (request) => new Response(`a:${await request.text()}`) },
  { path: '/v1/b', answer: () => new Response('b', { status: 201 }) },
];
const tokenGate: Gate = (request, _env, path) =>
  request.headers.get('authorization') === 'Bearer t' ? undefined : new Response(`refused ${path}`, { status: 401 });
const order: string[] = [];
const first: Gate = () => void order.push('first');
const second: Gate = () => void order.push('second');

function app(gates: Gate[]): Hono {
  const app = new Hono();
  for (const gate of gates) app.use('*', gateMiddleware(gate));
  mountPosts(app, posts);
  app.get('/v1/a', (c) => c.text('get a'));
  return app;
}

async function both(gates: Gate[], url: string, init: RequestInit): Promise<[string, string]> {
  const viaApp = await app(gates).fetch(new Request(url, init));
  const viaFast = await fastFetch(app(gates), gatedPosts(posts, gates))(new Request(url, init));
  return [`${viaApp.status} ${await viaApp.text()}`, `${viaFast.status} ${await viaFast.text()}`];
}

describe('one route table, two ways in', () => {
  const cases: [string, string, RequestInit][] = [
    ['a POST route', 'http://h/v1/a', { method: 'POST', body: 'x' }],
    ['another', 'http://h/v1/b', { method: 'POST' }],
    ['a query string', 'http://h/v1/a?x=1', { method: 'POST', body: 'y' }],
    ['another method on the path', 'http://h/v1/a', { method: 'GET' }],
    ['a path of no route', 'http://h/v1/c', { method: 'POST' }],
  ];
  for (const [what, url, init] of cases) {
    test(`${what}: the listener answers as the app does, with and without a gate`, async () => {
      const [viaApp, viaFast] = await both([], url, init);
      expect(viaFast).toBe(viaApp);
      const [gatedApp, gatedFast] = await both([tokenGate], url, init);
      expect(gatedFast).toBe(gatedApp);
      const [allowedApp, allowedFast] = await both([tokenGate], url, { ...init, headers: { authorization: 'Bearer t' } });
      expect(allowedFast).toBe(allowedApp);
    });
  }

  test('the gates run in order before the route, as the middleware does', async () => {
    order.length = 0;
    await gatedPosts(posts, [first, second])['/v1/b']!(new Request('http://h/v1/b', { method: 'POST' }), undefined);
    expect(order).toEqual(['first', 'second']);
  });

  test('a refusal by a gate is the answer; the route is not asked', async () => {
    const res = await gatedPosts(posts, [tokenGate])['/v1/a']!(new Request('http://h/v1/a', { method: 'POST' }), undefined);
    expect(res.status).toBe(401);
    expect(await res.text()).toBe('refused /v1/a');
  });
});
