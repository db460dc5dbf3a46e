import { afterEach, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCoordinator, type Coordinator } from './coordinator.ts';
import { parseRefresh } from '../schema/refresh.ts';
import type { PostRoutes } from '../platform/index.ts';

const seed = readFileSync(join(import.meta.dir, '..', '..', 'test', 'fixtures', 'seed-refresh.json'), 'utf8');

let coordinator: Coordinator | undefined;
afterEach(async () => {
  await coordinator?.close();
  coordinator = undefined;
});

describe('createCoordinator wires the breaker and cap settings', () => {
  test('circuitCooldownMs is the circuits’ cool-down', async () => {
    coordinator = createCoordinator({ circuitCooldownMs: 20 });
    for (let i = 0; i < 5; i++) coordinator.health.recordFailure(7);
    expect(coordinator.health.state(7)).toBe('open');
    // A bounded poll, not a timing assertion: with the default 30 s this would never turn.
    const deadline = Date.now() + 4_000;
    while (coordinator.health.state(7) === 'open' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(coordinator.health.state(7)).toBe('half_open');
  });

  test('maxRequestsPerInstance caps the requests held on an instance', () => {
    coordinator = createCoordinator({ maxRequestsPerInstance: 1 });
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    expect(coordinator.scheduler.pick().ok).toBe(true);
    coordinator.ledger.reserve({ requestId: 'held', p: 0, d: 1, pBlocks: 1, dBlocks: 1 });
    const refused = coordinator.scheduler.pick();
    expect(refused.ok ? 'a pair' : refused.reason).toBe('instance_cap');
  });

  test('an unchanged refresh gives an open instance its trial', () => {
    coordinator = createCoordinator();
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    for (let i = 0; i < 5; i++) coordinator.health.recordFailure(1);
    expect(coordinator.health.state(1)).toBe('open');
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    expect(coordinator.health.state(1)).toBe('half_open');
  });
});

describe('createCoordinator follows the links the registry reports', () => {
  test('a decode instance that stops listing a prefill peer releases the reservations on that pair', () => {
    coordinator = createCoordinator();
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    coordinator.ledger.reserve({ requestId: 'on-link', p: 0, d: 1, pBlocks: 1, dBlocks: 1 });
    coordinator.registry.apply(parseRefresh(JSON.parse(seed)));
    expect(coordinator.ledger.isActive('on-link')).toBe(true);
    const unlinked = JSON.parse(seed) as { instances: { dynamic_info: { peers?: number[] } }[] };
    unlinked.instances[1]!.dynamic_info.peers = [];
    coordinator.registry.apply(parseRefresh(unlinked));
    expect(coordinator.ledger.get('on-link')).toMatchObject({ state: 'released', code: 'unlink' });
    expect(coordinator.ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
  });
});

describe('managementFetch answers as managementApp does', () => {
  const url = (path: string) => `http://127.0.0.1:1026${path}`;
  const post = (path: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    new Request(url(path), { method: 'POST', headers, body });
  /** Status, headers and body of an answer, to compare two of them whole. */
  const whole = async (res: Response) => ({ status: res.status, headers: [...res.headers], body: await res.text() });

  /**
   * The same request through the app, the listener's handler and the listener's routes (as a
   * runtime with exact POST routes dispatches them) of three Coordinators built alike, and what
   * each holds after.
   */
  async function both(options: Parameters<typeof createCoordinator>[0], request: () => Request) {
    const viaApp = createCoordinator(options);
    const viaFront = createCoordinator(options);
    const viaRoutes = createCoordinator(options);
    try {
      const app = await whole(await viaApp.managementApp.fetch(request()));
      const front = await whole(await viaFront.managementFetch(request()));
      const routed = await whole(await routedBy(viaRoutes.managementPosts, viaRoutes.managementFetch, request()));
      // The view less the time of the refresh, which differs between the two by when each ran.
      const held = (c: Coordinator) => ({ view: { ...c.registry.view(), refreshed_at: null }, generation: c.registry.generation });
      expect(routed).toEqual(front);
      expect(held(viaRoutes)).toEqual(held(viaFront));
      return { app, front, appHeld: held(viaApp), frontHeld: held(viaFront), frontMetrics: await viaFront.metrics.metrics() };
    } finally {
      await viaApp.close();
      await viaFront.close();
      await viaRoutes.close();
    }
  }

  test('an accepted refresh: 200, empty, applied and counted', async () => {
    const r = await both({}, () => post('/v1/instances/refresh', seed));
    expect(r.front).toEqual(r.app);
    expect(r.front.status).toBe(200);
    expect(r.frontHeld).toEqual(r.appHeld);
    expect(r.frontHeld.view.instances.map((i) => i.id)).toEqual([0, 1]);
    expect(r.frontMetrics).toContain('pdlink_refresh_total{outcome="ok"} 1');
  });

  test.each([
    ['a body off the schema', () => post('/v1/instances/refresh', '{"ids":[1],"instances":[]}'), 400],
    ['malformed JSON', () => post('/v1/instances/refresh', '{"ids":'), 400],
    ['the wrong content type', () => post('/v1/instances/refresh', seed, { 'content-type': 'text/plain' }), 400],
    ['a query string', () => post('/v1/instances/refresh?from=controller', seed), 200],
    ['a trailing slash (not the route)', () => post('/v1/instances/refresh/', seed), 404],
    ['another method on the path', () => new Request(url('/v1/instances/refresh')), 405],
    ['another route', () => new Request(url('/v1/instances')), 200],
  ])('%s: the same answer and the same state', async (_name, request, status) => {
    const r = await both({}, request);
    expect(r.front).toEqual(r.app);
    expect(r.front.status).toBe(status);
    expect(r.frontHeld).toEqual(r.appHeld);
  });

  test('with a management token: refused without it as the middleware refuses, applied with it', async () => {
    const token = 'manage-secret-1';
    const refused = await both({ managementToken: token }, () => post('/v1/instances/refresh', seed));
    expect(refused.front).toEqual(refused.app);
    expect(refused.front.status).toBe(401);
    expect(refused.front.headers).toContainEqual(['www-authenticate', 'Bearer']);
    expect(refused.frontHeld.generation).toBe(0);
    const wrong = await both({ managementToken: token }, () =>
      post('/v1/instances/refresh', seed, { 'content-type': 'application/json', authorization: 'Bearer not-it' }),
    );
    expect(wrong.front).toEqual(wrong.app);
    expect(wrong.front.status).toBe(401);
    const accepted = await both({ managementToken: token }, () =>
      post('/v1/instances/refresh', seed, { 'content-type': 'application/json', authorization: `Bearer ${token}` }),
    );
    expect(accepted.front).toEqual(accepted.app);
    expect(accepted.front.status).toBe(200);
    expect(accepted.frontHeld.generation).toBe(1);
  });

  test('an error while applying: the envelope and a logged 500, as through the app', async () => {
    const errorLog = console.error;
    const logged: unknown[] = [];
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      coordinator = createCoordinator();
      coordinator.registry.onChange(() => {});
      const apply = coordinator.registry.apply.bind(coordinator.registry);
      coordinator.registry.apply = () => {
        throw new Error('a fault of the registry');
      };
      const res = await coordinator.managementFetch(post('/v1/instances/refresh', seed));
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: 'internal error', error_type: 'InternalError' });
      expect(logged).toHaveLength(1);
      coordinator.registry.apply = apply;
    } finally {
      console.error = errorLog;
    }
  });
});

describe('inferenceFetch answers as inferenceApp does', () => {
  const completion = (path = '/v1/completions', headers: Record<string, string> = {}) =>
    new Request(`http://127.0.0.1:1025${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'same', ...headers },
      body: JSON.stringify(
        path.includes('chat') ? { model: 'm', messages: [{ role: 'user', content: 'x' }] } : { model: 'm', prompt: 'p' },
      ),
    });
  const whole = async (res: Response) => ({ status: res.status, headers: [...res.headers], body: await res.text() });

  test.each([
    ['/v1/completions', 503],
    ['/v1/chat/completions', 503],
    ['/v1/completions?stream=1', 503],
    ['/v1/completions/', 404],
    ['/v1/models', 405],
  ])('%s without middleware: %p, as through the app', async (path, status) => {
    const viaApp = createCoordinator();
    const viaFront = createCoordinator();
    const viaRoutes = createCoordinator();
    try {
      const app = await whole(await viaApp.inferenceApp.fetch(completion(path)));
      const front = await whole(await viaFront.inferenceFetch(completion(path)));
      const routed = await whole(await routedBy(viaRoutes.inferencePosts, viaRoutes.inferenceFetch, completion(path)));
      expect(front).toEqual(app);
      expect(routed).toEqual(app);
      expect(front.status).toBe(status);
    } finally {
      await viaApp.close();
      await viaFront.close();
      await viaRoutes.close();
    }
  });

  test('with API keys the key is still checked, by the handler and by the routes', async () => {
    coordinator = createCoordinator({ apiKeys: ['key-1'] });
    const posts = coordinator.inferencePosts;
    expect((await coordinator.inferenceFetch(completion())).status).toBe(401);
    expect((await coordinator.inferenceFetch(completion('/v1/chat/completions'))).status).toBe(401);
    expect((await coordinator.inferenceFetch(completion('/v1/completions', { authorization: 'Bearer key-1' }))).status).toBe(503);
    expect((await posts['/v1/completions']!(completion(), undefined)).status).toBe(401);
    expect((await posts['/v1/chat/completions']!(completion('/v1/chat/completions'), undefined)).status).toBe(401);
    expect((await posts['/v1/completions']!(completion('/v1/completions', { authorization: 'Bearer key-1' }), undefined)).status).toBe(503);
  });

  test('with the client header dropped, it does not reach the proxy', async () => {
    coordinator = createCoordinator({ forwardAuthorization: false });
    const request = completion('/v1/completions', { authorization: 'Bearer client-own' });
    expect((await coordinator.inferenceFetch(request)).status).toBe(503);
    expect(request.headers.get('authorization')).toBeNull();
  });

  test('with a rate limit the bucket still counts, one bucket for both handlers', async () => {
    coordinator = createCoordinator({ rateLimit: { ratePerSecond: 0.001, burst: 1 } });
    expect((await coordinator.inferenceFetch(completion())).status).toBe(503);
    const refused = await coordinator.inferenceFetch(completion());
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect((await coordinator.inferenceApp.fetch(completion())).status).toBe(429);
    await coordinator.close();
    coordinator = createCoordinator({ rateLimit: { ratePerSecond: 0.001, burst: 1 } });
    expect((await coordinator.inferenceApp.fetch(completion())).status).toBe(503);
    expect(await whole(await coordinator.inferenceFetch(completion()))).toEqual(
      await whole(await coordinator.inferenceApp.fetch(completion())),
    );
  });

  test('keys and a rate limit: refused without a key before any token is taken, then counted per key', async () => {
    coordinator = createCoordinator({ apiKeys: ['key-1', 'key-2'], rateLimit: { ratePerSecond: 0.001, burst: 1 } });
    const withKey = (key: string) => completion('/v1/completions', { authorization: `Bearer ${key}` });
    const noKey = await coordinator.inferenceFetch(completion());
    expect(noKey.status).toBe(401);
    expect(noKey.headers.get('www-authenticate')).toBe('Bearer');
    expect((await coordinator.inferenceFetch(withKey('key-1'))).status).toBe(503);
    expect((await coordinator.inferenceFetch(withKey('key-1'))).status).toBe(429);
    expect((await coordinator.inferenceFetch(withKey('key-2'))).status).toBe(503);
  });

  test('a refusal answers as the app’s middleware does', async () => {
    const viaApp = createCoordinator({ apiKeys: ['key-1'] });
    const viaFront = createCoordinator({ apiKeys: ['key-1'] });
    try {
      expect(await whole(await viaFront.inferenceFetch(completion()))).toEqual(await whole(await viaApp.inferenceApp.fetch(completion())));
    } finally {
      await viaApp.close();
      await viaFront.close();
    }
  });
});

/** A request as a listener with exact POST routes dispatches it (Bun's routes: the path as sent, any query). */
function routedBy(posts: PostRoutes, fetch: (request: Request) => Response | Promise<Response>, request: Request) {
  const route = request.method === 'POST' ? posts[new URL(request.url).pathname] : undefined;
  return route === undefined ? fetch(request) : route(request, undefined);
}
