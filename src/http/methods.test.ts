import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { onError } from './envelope.ts';
import { allowedMethods, methodAwareNotFound, notFoundOf, urlPathIs } from './methods.ts';

/** A listener's root app as the processes build one: sub-apps mounted, the notFound of the root. */
function listener() {
  const sub = new Hono();
  sub.post('/v1/role/:role', (c) => c.json({ result: 'OK' }));
  sub.get('/v1/status', (c) => c.json({}));
  sub.post('/sim/faults', (c) => c.json({}));
  sub.get('/sim/faults', (c) => c.json({}));
  sub.delete('/sim/faults', (c) => c.json({}));
  const app = new Hono();
  app.onError(onError);
  app.use('*', async (_c, next) => next());
  app.route('/', sub);
  app.notFound(notFoundOf(app));
  return app;
}

describe('allowedMethods', () => {
  test('methods of the route that matches the path, HEAD wherever GET is, sorted', () => {
    const app = listener();
    expect(allowedMethods(app, '/v1/role/prefill')).toEqual(['POST']);
    expect(allowedMethods(app, '/v1/status')).toEqual(['GET', 'HEAD']);
    expect(allowedMethods(app, '/sim/faults')).toEqual(['DELETE', 'GET', 'HEAD', 'POST']);
  });

  test('middleware makes no path known', () => {
    expect(allowedMethods(listener(), '/nowhere')).toEqual([]);
  });

  test('routes added after the first call are seen', () => {
    const app = listener();
    expect(allowedMethods(app, '/late')).toEqual([]);
    app.put('/late', (c) => c.body(null));
    expect(allowedMethods(app, '/late')).toEqual(['PUT']);
  });
});

describe('notFoundOf', () => {
  test('a known path with another method: 405, Allow, the envelope naming method and path', async () => {
    const app = listener();
    const res = await app.request('/v1/role/decode', { method: 'GET' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(await res.json()).toEqual({
      error: 'GET is not served on /v1/role/decode; it serves POST',
      error_type: 'MethodNotAllowed',
    });
    const put = await app.request('/v1/status', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD');
  });

  test('HEAD on a POST-only path is 405 too, without a body', async () => {
    const res = await listener().request('/v1/role/prefill', { method: 'HEAD' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(await res.text()).toBe('');
  });

  test('an unknown path stays 404 for every method, and served methods still answer', async () => {
    const app = listener();
    for (const method of ['GET', 'POST', 'DELETE']) {
      const res = await app.request('/v1/nothing', { method });
      expect(res.status).toBe(404);
      expect(res.headers.get('allow')).toBeNull();
      expect(await res.json()).toMatchObject({ error_type: 'NotFound' });
    }
    expect((await app.request('/v1/status')).status).toBe(200);
    expect((await app.request('/v1/status', { method: 'HEAD' })).status).toBe(200);
  });
});

test('methodAwareNotFound renders with the given renderers and adds Allow itself', async () => {
  const app = new Hono();
  app.post('/v1/completions', (c) => c.body(null));
  app.notFound(
    methodAwareNotFound(app, {
      notFound: () => new Response('none', { status: 404 }),
      methodNotAllowed: (_c, allow) => new Response(`only ${allow.join('+')}`, { status: 405 }),
    }),
  );
  const res = await app.request('/v1/completions');
  expect([res.status, res.headers.get('allow'), await res.text()]).toEqual([405, 'POST', 'only POST']);
  const missing = await app.request('/v2/completions');
  expect([missing.status, await missing.text()]).toEqual([404, 'none']);
});

describe('urlPathIs', () => {
  const path = '/v1/instances/refresh';
  test.each([
    ['http://127.0.0.1:1026/v1/instances/refresh', true],
    ['https://[::1]:1026/v1/instances/refresh', true],
    ['http://127.0.0.1:1026/v1/instances/refresh?x=1', true],
    ['http://127.0.0.1:1026/v1/instances/refresh#top', true],
    ['http://127.0.0.1:1026/v1/instances/refresh/', false],
    ['http://127.0.0.1:1026/v1/instances/refreshed', false],
    ['http://127.0.0.1:1026/v1/instances', false],
    ['http://127.0.0.1:1026/pd/v1/instances/refresh', false],
    ['http://127.0.0.1:1026/v1/instances/%72efresh', false],
    ['http://127.0.0.1:1026', false],
  ])('%s: %p', (url, expected) => {
    expect(urlPathIs(url, path)).toBe(expected);
  });

  test('the path Hono routes by is the one it accepts', async () => {
    const seen: string[] = [];
    const app = new Hono();
    app.all('*', (c) => {
      seen.push(c.req.path);
      return c.body(null, 204);
    });
    for (const url of ['http://h:1/v1/instances/refresh?x=1', 'https://[::1]:8/v1/instances/refresh#a']) {
      await app.fetch(new Request(url));
      expect(urlPathIs(url, seen.at(-1)!)).toBe(true);
    }
    expect(seen).toEqual([path, path]);
  });
});
