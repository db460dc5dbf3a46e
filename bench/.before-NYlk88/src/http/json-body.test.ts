import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import * as v from 'valibot';
import { errors } from '../core/errors.ts';
import { onError } from './envelope.ts';
import { jsonBody, type JsonBodyOptions } from './json-body.ts';

const Body = v.object({ n: v.pipe(v.string('must be a string'), v.transform(Number)), tag: v.optional(v.string('must be a string')) });

function appWith(options: JsonBodyOptions) {
  const seen: unknown[] = [];
  const app = new Hono();
  app.onError(onError);
  app.post('/s', jsonBody(Body, options), (c) => {
    const body = c.req.valid('json');
    seen.push(body);
    return c.json({ doubled: body.n * 2 });
  });
  return { app, seen };
}

const post = (app: Hono, body: string, contentType = 'application/json') =>
  app.request('/s', { method: 'POST', headers: { 'content-type': contentType }, body });

describe('jsonBody', () => {
  test('the handler reads the schema’s typed output', async () => {
    const { app, seen } = appWith({ limitBytes: 1024 });
    const res = await post(app, '{"n":"21"}');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ doubled: 42 });
    expect(seen).toEqual([{ n: 21 }]);
  });

  test('a body off the schema is 422 by default, every issue named, and the handler never runs', async () => {
    const { app, seen } = appWith({ limitBytes: 1024 });
    const res = await post(app, '{"n":1,"tag":2}');
    expect(res.status).toBe(422);
    expect(((await res.json()) as { issues: unknown }).issues).toEqual([
      { path: 'n', message: 'must be a string' },
      { path: 'tag', message: 'must be a string' },
    ]);
    expect(seen).toEqual([]);
  });

  test('the route names its own refusal: 400 with invalidBody', async () => {
    const { app } = appWith({ limitBytes: 1024, refuse: errors.invalidBody });
    const res = await post(app, '{}');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error_type: string }).error_type).toBe('InvalidRequestBody');
  });

  test('object: a top-level array is refused as not an object', async () => {
    const { app } = appWith({ limitBytes: 1024, object: true });
    const res = await post(app, '[{"n":"1"}]');
    expect(res.status).toBe(422);
    expect(((await res.json()) as { issues: unknown }).issues).toEqual([{ path: '', message: 'must be a JSON object' }]);
  });

  test('reading checks come first (content type, size), and every refusal is reported to onRefused', async () => {
    const refused: string[] = [];
    const { app, seen } = appWith({ limitBytes: 16, onRefused: (e) => refused.push((e as { code: string }).code) });
    expect((await post(app, '{"n":"1"}', 'text/plain')).status).toBe(400);
    expect((await post(app, `{"n":"${'1'.repeat(32)}"}`)).status).toBe(413);
    expect((await post(app, '{"n":1}')).status).toBe(422);
    expect(refused).toEqual(['unsupported_media_type', 'payload_too_large', 'unprocessable']);
    expect(seen).toEqual([]);
  });

  test('a check function stands in for a schema; what it throws is the answer', async () => {
    const app = new Hono();
    app.onError(onError);
    const check = (body: unknown) => {
      if (typeof body !== 'number') throw errors.invalidBody([{ path: '', message: 'must be a number' }]);
      return { value: body };
    };
    app.post('/c', jsonBody(check, { limitBytes: 64 }), (c) => c.json(c.req.valid('json')));
    const ok = await app.request('/c', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '7' });
    expect(await ok.json()).toEqual({ value: 7 });
    const bad = await app.request('/c', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '"x"' });
    expect(bad.status).toBe(400);
  });
});
