import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { inferenceGate } from './auth.ts';
import { gateMiddleware } from './gate.ts';
import { rateGate, TokenBuckets } from './rate-limit.ts';

describe('TokenBuckets', () => {
  test('a burst passes, then the wait until one token has refilled; clients are apart', () => {
    let now = 0;
    const buckets = new TokenBuckets({ ratePerSecond: 2, burst: 3 }, () => now);
    expect([buckets.take('a'), buckets.take('a'), buckets.take('a')]).toEqual([0, 0, 0]);
    expect(buckets.take('a')).toBeCloseTo(0.5);
    expect(buckets.take('b')).toBe(0);
    now = 500;
    expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBeCloseTo(0.5);
  });
});

describe('rateGate as middleware', () => {
  test('429 in OpenAI shape with Retry-After once a key has used its burst; another key still passes', async () => {
    const app = new Hono();
    app.use('*', gateMiddleware(inferenceGate({ apiKeys: ['k1', 'k2'], forwardAuthorization: false })));
    app.use('*', gateMiddleware(rateGate({ ratePerSecond: 0.01, burst: 2 })));
    app.post('/v1/completions', (c) => c.text('ok'));
    const send = (key: string) => app.request('/v1/completions', { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect((await send('k1')).status).toBe(200);
    expect((await send('k1')).status).toBe(200);
    const refused = await send('k1');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as { error: { type: string } };
    expect(body.error.type).toBe('rate_limit_error');
    expect((await send('k2')).status).toBe(200);
  });

  test('without API keys a client-chosen bearer does not open a fresh bucket: the address decides', async () => {
    const app = new Hono();
    app.use('*', gateMiddleware(inferenceGate({ apiKeys: undefined, forwardAuthorization: true })));
    app.use('*', gateMiddleware(rateGate({ ratePerSecond: 0.01, burst: 1 })));
    app.post('/v1/completions', (c) => c.text('ok'));
    const send = (key: string) => app.request('/v1/completions', { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect((await send('a')).status).toBe(200);
    expect((await send('b')).status).toBe(429);
  });
});
