/**
 * Keep-alive connections an engine closes on its side (its idle timeout). First what Bun's fetch
 * does by itself, then what the proxy adds: a leg whose pooled connection was closed under it is
 * sent once more to the same instance, without blaming the instance, and never after D's answer
 * began.
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

  test('P’s pooled connection closed under the P leg: sent again to the same P, 200, no failure counted', async () => {
    h = await startHarness({ prefill: 2, failureThreshold: 1 });
    await warm(h);
    await warm(h);
    const events = circuitEvents(h);
    // Whichever P round robin picks next finds its connection closed; the other keeps its script unused.
    for (const p of h.ps) p.script.push({ kind: 'destroy' });
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'stale-p' });
    expect(res.status).toBe(200);
    const dRequest = h.ds[0]!.requests.find((r) => r.headers['x-request-id'] === 'stale-p')!;
    expect(await res.json()).toEqual(decodeJson(h.ds[0]!, dRequest));

    const tried = h.ps.map((p) => p.requests.filter((r) => r.headers['x-request-id'] === 'stale-p'));
    const used = tried.findIndex((requests) => requests.length > 0);
    expect(tried[used]!.map((r) => r.connection)).toEqual([1, 2]);
    expect(tried[1 - used]).toHaveLength(0);
    // D got P's parameters from the retried leg, verbatim.
    expect((dRequest.body['kv_transfer_params'] as { remote_engine_id: string }).remote_engine_id).toBe(`engine-p${used}`);

    await h.settled();
    expect(events).toEqual([]);
    expect(h.scheduler.health.state(P_ID(used))).toBe('closed');
    expect(await h.metric('pdlink_pd_stale_connection_retries_total', { leg: 'prefill' })).toBe(1);
    expect(await h.metric('pdlink_pd_retries_total', { reason: 'transport' })).toBe(0);
    expect(h.ledger.totals()).toMatchObject({ done: 3, failed: 0 });
  });

  for (const stream of [false, true]) {
    test(`D’s pooled connection closed under the D leg (${stream ? 'streaming' : 'JSON'}): sent again to D, 200 with D’s exact bytes`, async () => {
      h = await startHarness({ failureThreshold: 1 });
      await warm(h);
      const events = circuitEvents(h);
      const d = h.ds[0]!;
      d.script.push({ kind: 'destroy' });
      const states: string[] = [];
      h.ledger.onRecord((event) => {
        if (event.record.clientRequestId === 'stale-d') states.push(event.record.state);
      });
      const res = await h.post('/v1/completions', { ...body, stream }, { 'x-request-id': 'stale-d' });
      expect(res.status).toBe(200);
      const retried = d.requests[2]!;
      const expected = stream ? decodeChunks(d, retried).join('') : JSON.stringify(decodeJson(d, retried));
      expect(await res.text()).toBe(expected);

      expect(d.requests.map((r) => r.connection)).toEqual([1, 1, 2]);
      expect(d.requests[1]!.text).toBe(retried.text);
      // P was asked once: the retry stays on the D leg.
      expect(h.ps[0]!.requests).toHaveLength(2);
      await h.settled();
      expect(events).toEqual([]);
      expect(h.scheduler.health.state(D_ID(0))).toBe('closed');
      expect(await h.metric('pdlink_pd_stale_connection_retries_total', { leg: 'decode' })).toBe(1);
      // The record went through each phase once (reserved already prefilling) and completed: nothing was reserved twice.
      expect(states).toEqual(['prefilling', 'transferring', 'done']);
      expect(h.ledger.totals()).toMatchObject({ done: 2, failed: 0 });
    });
  }

  test('a D that really died (its retry is refused): 502, and D’s failure is counted', async () => {
    h = await startHarness({ failureThreshold: 1 });
    await warm(h);
    const d = h.ds[0]!;
    d.respond = (_request, engine) => {
      void engine.stopListening();
      return { kind: 'destroy' };
    };
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'dead-d' });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-request-id')).toBe('dead-d');
    const error = ((await res.json()) as ErrorBody).error;
    expect(error.code).toBe('upstream_failed');
    expect(error.message).toContain(`decode instance ${D_ID(0)} could not be reached`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(d.requests).toHaveLength(2);
    expect(d.connections).toBe(1);
    await h.settled();
    expect(h.scheduler.health.state(D_ID(0))).toBe('open');
    expect(await h.metric('pdlink_pd_stale_connection_retries_total', { leg: 'decode' })).toBe(1);
    expect(h.ledger.totals()).toMatchObject({ done: 1, failed: 1 });
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
