/**
 * Instances that fail and come back, through the real proxy, ledger and scheduler on loopback: a D
 * that never got its leg (connection refused) hands it to another D of the same P, one that had it
 * (a 5xx, a lost connection) never does; with every candidate's circuit open one trial is made
 * before 503; a per-instance cap answers 429; an engine silent for http_timeout_seconds fails its leg.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import type { Behaviour, EngineRequest, FakeEngine, Responder } from './fixtures/proxy/fake-engine.ts';
import { D_ID, P_ID, startHarness, until, type Harness } from './fixtures/proxy/harness.ts';
import { decodeChunks, decodeResponder, gate, prefillResponder } from './fixtures/proxy/responders.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const body = { model: 'test-model', prompt: 'Tell me a story', max_tokens: 16 };

interface ErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
}

/** A responder shared by several engines whose very first answer, whichever engine gets it, is `failure`. */
function firstFails(failure: Behaviour, otherwise: Responder): Responder & { engine: string | undefined } {
  const responder = (request: EngineRequest, engine: FakeEngine): Behaviour => {
    if (responder.engine !== undefined) return otherwise(request, engine);
    responder.engine = engine.name;
    return failure;
  };
  responder.engine = undefined as string | undefined;
  return responder;
}

/** Index of an engine by name (`d1` → 1). */
const index = (name: string | undefined): number => Number(name?.slice(1));

describe('a D leg goes to another D of the same P only when it never reached the first', () => {
  test('D refuses the connection: served by the other D with P’s KV parameters; the reservation moved', async () => {
    h = await startHarness({ decode: 2 });
    await h.ds[0]!.close();
    const served: number[] = [];
    for (let i = 0; i < 2; i++) {
      const id = `refused-${i}`;
      const res = await h.post('/v1/completions', { ...body, stream: true }, { 'x-request-id': id });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('d1:one');
      served.push(h.transfer(id)!.d);
    }
    expect(served).toEqual([D_ID(1), D_ID(1)]);
    // Round robin offers the closed D first to at least one of the two requests.
    expect(await h.metric('pdlink_pd_decode_retries_total', { reason: 'refused' })).toBeGreaterThanOrEqual(1);
    const pParams = JSON.stringify(h.ds[1]!.requests.map((r) => r.body['kv_transfer_params']));
    expect(pParams).toContain('engine-p0');
    await h.settled();
    expect(h.ledger.totals()).toMatchObject({ done: 2, failed: 0 });
    expect(h.ps[0]!.requests).toHaveLength(2);
  });

  test('D answers 503: it had the leg (and may have pulled P’s blocks), so no other D gets it; 502 charged to D', async () => {
    const responder = firstFails({ kind: 'json', status: 503, body: { error: { message: 'no free KV blocks' } } }, decodeResponder);
    h = await startHarness({ decode: 2, failureThreshold: 1, decodeResponder: responder });
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'd-503' });
    expect(res.status).toBe(502);
    const first = index(responder.engine);
    const error = ((await res.json()) as ErrorBody).error;
    expect(error).toMatchObject({ code: 'upstream_failed', type: 'server_error' });
    expect(error.message).toBe(`decode instance ${D_ID(first)} answered 503: no free KV blocks`);
    expect(h.ds[1 - first]!.requests).toHaveLength(0);
    expect(h.scheduler.health.state(D_ID(first))).toBe('open');
    expect(await h.metric('pdlink_pd_decode_retries_total', { reason: 'refused' })).toBe(0);
    expect(await h.metric('pdlink_pd_instance_failures_total', { instance: String(D_ID(first)) })).toBe(1);
    expect(await h.metric('pdlink_pd_instance_failures_total', { instance: String(P_ID(0)) })).toBe(0);
    await h.settled();
    expect(h.transfer('d-503')).toMatchObject({ state: 'failed', code: 'decode_failed', d: D_ID(first) });
  });

  test('D answers 4xx: the client’s answer, never sent to another D nor charged', async () => {
    const responder = firstFails({ kind: 'json', status: 422, body: { detail: 'bad sampling params' } }, decodeResponder);
    h = await startHarness({ decode: 2, failureThreshold: 1, decodeResponder: responder });
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(422);
    const first = index(responder.engine);
    expect(h.ds[1 - first]!.requests).toHaveLength(0);
    expect(h.scheduler.health.state(D_ID(first))).toBe('closed');
    await h.settled();
  });

  test('D loses the connection after the request went out: 502, not sent to another D (it may hold the blocks)', async () => {
    const responder = firstFails({ kind: 'destroy' }, decodeResponder);
    h = await startHarness({ decode: 2, decodeResponder: responder });
    const res = await h.post('/v1/completions', { ...body, stream: true });
    expect(res.status).toBe(502);
    const first = index(responder.engine);
    expect(((await res.json()) as ErrorBody).error.message).toContain(`decode instance ${D_ID(first)}`);
    expect(h.ds[1 - first]!.requests).toHaveLength(0);
    await h.settled();
  });

  test('every D refuses: 502 naming the last one, and the ledger is back to zero', async () => {
    h = await startHarness({ decode: 2 });
    for (const d of h.ds) await d.close();
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'all-d' });
    expect(res.status).toBe(502);
    const error = ((await res.json()) as ErrorBody).error;
    expect(error.code).toBe('upstream_failed');
    expect(error.message).toMatch(new RegExp(`^decode instance (${D_ID(0)}|${D_ID(1)}) could not be reached: ECONNREFUSED`));
    expect(await h.metric('pdlink_pd_decode_retries_total', { reason: 'refused' })).toBe(1);
    await h.settled();
    expect(h.transfer('all-d')).toMatchObject({ state: 'failed', code: 'decode_failed' });
  });
});

describe('every candidate open: one trial before 503', () => {
  test('the only D’s circuit is open: the next request is its trial and succeeds; a second one waits on it', async () => {
    h = await startHarness({ failureThreshold: 1 });
    h.ds[0]!.script.push({ kind: 'json', status: 500, body: { error: { message: 'restarting' } } });
    expect((await h.post('/v1/completions', body)).status).toBe(502);
    expect(h.scheduler.health.state(D_ID(0))).toBe('open');
    const hold = gate();
    h.ds[0]!.respond = (request, engine) =>
      request.body['stream'] === true
        ? { kind: 'stream', steps: [{ wait: hold.promise }, ...decodeChunks(engine, request).map((write) => ({ write }))] }
        : decodeResponder(request, engine);
    const trial = h.post('/v1/completions', { ...body, stream: true });
    await h.ds[0]!.waitForRequests(2);
    const second = await h.post('/v1/completions', body);
    expect(second.status).toBe(503);
    expect(((await second.json()) as ErrorBody).error.message).toContain('unhealthy');
    hold.open();
    const res = await trial;
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');
    await h.settled();
  });

  test('the only P’s circuit is open: the next request is its trial', async () => {
    h = await startHarness({ failureThreshold: 1, settings: { maxRetries: 0 } });
    h.ps[0]!.script.push({ kind: 'json', status: 500, body: { error: { message: 'restarting' } } });
    expect((await h.post('/v1/completions', body)).status).toBe(502);
    expect(h.scheduler.health.state(P_ID(0))).toBe('open');
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(200);
    await res.json();
    await h.settled();
  });
});

describe('single_node_max_requests', () => {
  test('every candidate at its cap: 429 with an OpenAI error body; served again once a request ends', async () => {
    h = await startHarness({ maxRequestsPerInstance: 1 });
    const hold = gate();
    h.ds[0]!.respond = (request, engine) => ({
      kind: 'stream',
      steps: [{ wait: hold.promise }, ...decodeChunks(engine, request).map((write) => ({ write }))],
    });
    const first = h.post('/v1/completions', { ...body, stream: true });
    await h.ds[0]!.waitForRequests(1);
    const refused = await h.post('/v1/completions', body, { 'x-request-id': 'capped' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-request-id')).toBe('capped');
    const error = ((await refused.json()) as ErrorBody).error;
    expect(error.type).toBe('rate_limit_error');
    expect(error.code).toBe('too_many_requests');
    expect(error.message).toContain('single_node_max_requests');
    expect(h.ps[0]!.requests).toHaveLength(1);
    expect(h.scheduler.health.state(P_ID(0))).toBe('closed');
    hold.open();
    expect((await first).status).toBe(200);
    await h.settled();
    h.ds[0]!.respond = decodeResponder;
    expect((await h.post('/v1/completions', body)).status).toBe(200);
    await h.settled();
  });

  test('an instance at its cap is passed over for one with room', async () => {
    const hold = gate();
    const responder = firstFails({ kind: 'stall' }, decodeResponder);
    // The first D request, whichever D gets it, is held until the gate opens.
    const held: Responder = (request, engine) =>
      responder.engine === undefined
        ? (responder(request, engine),
          { kind: 'stream', steps: [{ wait: hold.promise }, ...decodeChunks(engine, request).map((write) => ({ write }))] })
        : decodeResponder(request, engine);
    h = await startHarness({ prefill: 2, decode: 2, maxRequestsPerInstance: 1, decodeResponder: held });
    const first = h.post('/v1/completions', { ...body, stream: true }, { 'x-request-id': 'holder' });
    await until(() => responder.engine !== undefined, 'the first D request');
    const holder = h.transfer('holder')!;
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'second' });
    expect(res.status).toBe(200);
    await res.json();
    const second = h.transfer('second')!;
    expect(second.p).not.toBe(holder.p);
    expect(second.d).not.toBe(holder.d);
    hold.open();
    await (await first).text();
    await h.settled();
  });
});

describe('http_timeout_seconds: an engine silent that long fails its leg', () => {
  test('P silent: retried on the other P, which answers', async () => {
    h = await startHarness({
      prefill: 2,
      settings: { engineIdleTimeoutMs: 150 },
      prefillResponder: firstFails({ kind: 'stall' }, prefillResponder),
    });
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(200);
    await res.json();
    expect(await h.metric('pdlink_pd_retries_total', { reason: 'transport' })).toBe(1);
    await h.settled();
  });

  test('D silent mid-stream: an SSE error event naming the setting, and D’s connection is closed', async () => {
    h = await startHarness({ settings: { engineIdleTimeoutMs: 150 } });
    let first = '';
    h.ds[0]!.respond = (request, engine) => {
      first = decodeChunks(engine, request)[0]!;
      return { kind: 'stream', steps: [{ write: first }, { wait: new Promise(() => {}) }] };
    };
    const res = await h.post('/v1/completions', { ...body, stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.startsWith(first)).toBe(true);
    const event = JSON.parse(text.slice(first.length + 'data: '.length)) as ErrorBody;
    expect(event.error.code).toBe('upstream_failed');
    expect(event.error.message).toContain('http_timeout_seconds');
    await h.ds[0]!.requests[0]!.aborted;
    await h.settled();
  });

  test('D silent before its head: 502 naming the setting', async () => {
    h = await startHarness({ settings: { engineIdleTimeoutMs: 150 } });
    h.ds[0]!.script.push({ kind: 'stall' });
    const res = await h.post('/v1/completions', body);
    expect(res.status).toBe(502);
    expect(((await res.json()) as ErrorBody).error.message).toContain('http_timeout_seconds');
    await h.ds[0]!.requests[0]!.aborted;
    await h.settled();
  });
});
