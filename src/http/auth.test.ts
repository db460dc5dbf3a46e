import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { bearerOf, BearerSecrets, inferenceGate, isProbePath, managementAuth } from './auth.ts';
import { gateMiddleware } from './gate.ts';

describe('bearer secrets', () => {
  test('bearerOf takes the credential of a Bearer header only', () => {
    expect(bearerOf('Bearer abc')).toBe('abc');
    expect(bearerOf('bearer   abc ')).toBe('abc');
    expect(bearerOf('Basic abc')).toBeUndefined();
    expect(bearerOf('Bearer a b')).toBeUndefined();
    expect(bearerOf(undefined)).toBeUndefined();
  });

  test('accepts any listed secret, refuses others, prefixes and extensions', () => {
    const secrets = new BearerSecrets(['k1-long-secret', 'k2']);
    expect(secrets.accepts('Bearer k1-long-secret')).toBe(true);
    expect(secrets.accepts('Bearer k2')).toBe(true);
    expect(secrets.accepts('Bearer k1')).toBe(false);
    expect(secrets.accepts('Bearer k2x')).toBe(false);
    expect(secrets.accepts(undefined)).toBe(false);
  });

  test('probe paths', () => {
    for (const p of ['/v1/health', '/v1/startup', '/v1/readiness', '/v2/health/live', '/v2/health/ready'])
      expect(isProbePath(p)).toBe(true);
    for (const p of ['/metrics', '/dashboard', '/v1/instances', '/v2/healthz']) expect(isProbePath(p)).toBe(false);
  });
});

describe('managementAuth', () => {
  const app = new Hono();
  app.use('*', managementAuth('tok-123'));
  let calls = 0;
  app.post('/v1/instances/refresh', (c) => {
    calls++;
    return c.text('ok');
  });
  app.get('/v1/health', (c) => c.text('alive'));

  test('401 with the envelope and WWW-Authenticate, handler not run, for none or a wrong token', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'tok-123' }]) {
      const res = await app.request('/v1/instances/refresh', { method: 'POST', headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      const body = (await res.json()) as { error: string; error_type: string };
      expect(body.error_type).toBe('Unauthorized');
      expect(body.error).toContain('management token required');
      expect(JSON.stringify(body)).not.toContain('tok-123');
    }
    expect(calls).toBe(0);
  });

  test('the right token passes; probes need none', async () => {
    expect((await app.request('/v1/instances/refresh', { method: 'POST', headers: { authorization: 'Bearer tok-123' } })).status).toBe(200);
    expect(calls).toBe(1);
    expect((await app.request('/v1/health')).status).toBe(200);
  });

  test('no token: open', async () => {
    const open = new Hono();
    open.use('*', managementAuth(undefined));
    open.get('/x', (c) => c.text('x'));
    expect((await open.request('/x')).status).toBe(200);
  });
});

describe('inferenceGate as middleware', () => {
  const seen: (string | null)[] = [];
  const build = (forwardAuthorization: boolean, apiKeys: string[] | undefined) => {
    const app = new Hono();
    app.use('*', gateMiddleware(inferenceGate({ apiKeys, forwardAuthorization })));
    app.post('/v1/completions', (c) => {
      seen.push(c.req.raw.headers.get('authorization'));
      return c.text('ok');
    });
    return app;
  };

  test('401 in OpenAI shape without a valid key', async () => {
    const app = build(false, ['key-a']);
    const res = await app.request('/v1/completions', { method: 'POST', headers: { authorization: 'Bearer nope' } });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: { type: string; code: string; message: string } };
    expect(body.error.type).toBe('authentication_error');
    expect(body.error.code).toBe('unauthorized');
    expect(seen).toEqual([]);
  });

  test('a valid key passes and is dropped before the handler unless forwarding is on', async () => {
    await build(false, ['key-a']).request('/v1/completions', { method: 'POST', headers: { authorization: 'Bearer key-a' } });
    await build(true, ['key-a']).request('/v1/completions', { method: 'POST', headers: { authorization: 'Bearer key-a' } });
    await build(true, undefined).request('/v1/completions', { method: 'POST', headers: { authorization: 'Bearer engine-key' } });
    expect(seen).toEqual([null, 'Bearer key-a', 'Bearer engine-key']);
  });
});
