/**
 * Keep-alive connections an engine closes on its side. First what Bun's fetch does by itself, then
 * what the proxy does: an idle close seen in time costs nothing (a new connection), and a leg whose
 * connection was lost after it went out is never sent again, P or D, on either engine client: the
 * engine may have received it and acted on it (D pulling P's blocks). A P leg goes to another P
 * (prefill's own retry), a D leg fails charged to D.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { FakeEngine } from './fixtures/proxy/fake-engine.ts';
import { D_ID, P_ID, startHarness, type Harness } from './fixtures/proxy/harness.ts';
import { decodeChunks, decodeJson, prefillResponder } from './fixtures/proxy/responders.ts';

let h: Harness | undefined;
let engine: FakeEngine | undefined;
afterEach(async () => {
  await h?.close();
  await engine?.close();
  h = undefined;
  engine = undefined;
});

const body = { model: 'test-model', prompt: 'Tell me a story', max_tokens: 16 };

interface ErrorBody {
  error: { message: string; type: string; code: string };
}

/** Every circuit change the scheduler's breakers announce from now on. */
function circuitEvents(harness: Harness): string[] {
  const events: string[] = [];
  harness.scheduler.health.onChange((event) => events.push(`${event.id}:${event.state}`));
  return events;
}

/** One request through the proxy, read to the end, so every connection is back in its pool. */
async function warm(harness: Harness): Promise<void> {
  const res = await harness.post('/v1/completions', body);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  await harness.settled();
}

describe('Bun’s fetch and a pooled connection the engine closed', () => {
  test('closed while idle: fetch opens a new connection by itself', async () => {
    engine = await FakeEngine.start('127.0.0.30', 'e', prefillResponder);
    const url = `http://${engine.host}:${engine.port}/v1/completions`;
    const first = await fetch(url, { method: 'POST', body: '{}' });
    await first.text();
    expect(await engine.closeIdle()).toBe(1);
    const second = await fetch(url, { method: 'POST', body: '{}' });
    expect(second.status).toBe(200);
    await second.text();
    expect(engine.requests.map((r) => r.connection)).toEqual([1, 2]);
  });

  test('closed as the next request arrives on it: fetch fails with ECONNRESET and does not retry', async () => {
    engine = await FakeEngine.start('127.0.0.30', 'e', prefillResponder);
    const url = `http://${engine.host}:${engine.port}/v1/completions`;
    await (await fetch(url, { method: 'POST', body: '{}' })).text();
    engine.script.push({ kind: 'destroy' });
    const failure = await fetch(url, { method: 'POST', body: '{}' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((failure as { code?: unknown } | undefined)?.code).toBe('ECONNRESET');
    // The request went out on the pooled connection and was never sent again.
    expect(engine.requests.map((r) => r.connection)).toEqual([1, 1]);
    expect(engine.connections).toBe(1);
  });
});

describe('proxy', () => {
  test('engines close idle connections between requests: the next request succeeds on new ones', async () => {
    h = await startHarness();
    await warm(h);
    expect(await h.ps[0]!.closeIdle()).toBe(1);
    expect(await h.ds[0]!.closeIdle()).toBe(1);
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'after-idle' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(decodeJson(h.ds[0]!, h.ds[0]!.requests[1]!));
    expect(h.ps[0]!.requests.map((r) => r.connection)).toEqual([1, 2]);
    expect(h.ds[0]!.requests.map((r) => r.connection)).toEqual([1, 2]);
    await h.settled();
  });

  for (const engineClient of ['sockets', 'fetch'] as const) {
    test(`P's pooled connection lost under the P leg: not sent to that P again; another P serves it (${engineClient})`, async () => {
      h = await startHarness({ prefill: 2, failureThreshold: 1, settings: { engineClient } });
      await warm(h);
      await warm(h);
      // Whichever P round robin picks next loses the connection after the leg arrived.
      let lost: string | undefined;
      for (const p of h.ps)
        p.respond = (request, engine) => {
          if (lost !== undefined) return prefillResponder(request, engine);
          lost = engine.name;
          return { kind: 'destroy' };
        };
      const res = await h.post('/v1/completions', body, { 'x-request-id': 'stale-p' });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const tried = h.ps.map((p) => p.requests.filter((r) => r.headers['x-request-id'] === 'stale-p'));
      expect(tried.map((requests) => requests.length)).toEqual([1, 1]);
      expect(await h.metric('pdlink_pd_stale_connection_retries_total', { leg: 'prefill' })).toBe(0);
      expect(await h.metric('pdlink_pd_retries_total', { reason: 'transport' })).toBe(1);
      await h.settled();
    });

    for (const stream of [false, true]) {
      test(`D's pooled connection lost under the D leg (${stream ? 'streaming' : 'JSON'}, ${engineClient}): 502 charged to D, never sent again`, async () => {
        h = await startHarness({ decode: 2, settings: { engineClient } });
        await warm(h);
        await warm(h);
        for (const d of h.ds) d.script.push({ kind: 'destroy' });
        const res = await h.post('/v1/completions', { ...body, stream }, { 'x-request-id': 'stale-d' });
        expect(res.status).toBe(502);
        const error = ((await res.json()) as ErrorBody).error;
        expect(error.code).toBe('upstream_failed');
        const tried = h.ds.map((d) => d.requests.filter((r) => r.headers['x-request-id'] === 'stale-d').length);
        // One D had the leg once; the other never saw it (that D may have pulled P's blocks).
        const dead = tried.indexOf(1);
        expect([...tried].sort()).toEqual([0, 1]);
        expect(error.message).toContain(`decode instance ${D_ID(dead)} failed before answering`);
        expect(await h.metric('pdlink_pd_instance_failures_total', { instance: String(D_ID(dead)) })).toBe(1);
        expect(await h.metric('pdlink_pd_decode_retries_total', { reason: 'refused' })).toBe(0);
        await h.settled();
        expect(h.transfer('stale-d')).toMatchObject({ state: 'failed', code: 'decode_failed' });
      });
    }
  }

  test('a D that died after its leg went out (its port refuses now): 502, D charged, no other D reads the blocks', async () => {
    h = await startHarness({ decode: 2, failureThreshold: 1 });
    await warm(h);
    await warm(h);
    for (const d of h.ds)
      d.respond = (_request, engine) => {
        void engine.stopListening();
        return { kind: 'destroy' };
      };
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'dead-d' });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-request-id')).toBe('dead-d');
    const error = ((await res.json()) as ErrorBody).error;
    expect(error.code).toBe('upstream_failed');
    expect(error.message).toMatch(/^decode instance \d+ failed before answering: ECONNRESET/);
    expect(h.ds.reduce((n, d) => n + d.requests.filter((r) => r.headers['x-request-id'] === 'dead-d').length, 0)).toBe(1);
    await h.settled();
    expect(await h.metric('pdlink_pd_stale_connection_retries_total', { leg: 'decode' })).toBe(0);
  });

  test('D’s connection lost after its status line: 502, never sent again', async () => {
    h = await startHarness();
    await warm(h);
    const d = h.ds[0]!;
    d.script.push({ kind: 'stream', steps: [{ destroy: true }] });
    const res = await h.post('/v1/completions', { ...body, stream: true }, { 'x-request-id': 'late-d' });
    expect(res.status).toBe(502);
    expect(((await res.json()) as ErrorBody).error.code).toBe('upstream_failed');
    expect(d.requests.filter((r) => r.headers['x-request-id'] === 'late-d')).toHaveLength(1);
    await h.settled();
    expect(await h.metric('pdlink_pd_stale_connection_retries_total', { leg: 'decode' })).toBe(0);
  });

  test('a connection lost on an instance that never answered before is not sent to it again', async () => {
    let lost = false;
    h = await startHarness({
      prefill: 2,
      prefillResponder: (request, engine) => {
        if (lost) return prefillResponder(request, engine);
        lost = true;
        return { kind: 'destroy' };
      },
    });
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'fresh' });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    // The first P lost the connection and was not asked again; the other P served the request.
    expect(h.ps.map((p) => p.requests.length)).toEqual([1, 1]);
    expect(await h.metric('pdlink_pd_stale_connection_retries_total', { leg: 'prefill' })).toBe(0);
    expect(await h.metric('pdlink_pd_retries_total', { reason: 'transport' })).toBe(1);
    await h.settled();
  });
});
