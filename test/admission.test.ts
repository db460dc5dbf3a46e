/**
 * Admission on the real inference path (fake engines on loopback, the registry, the KV ledger, the
 * scheduler, the proxy): a saturated cluster queues requests and serves the higher class first, a
 * wait that runs out is a 429 with `Retry-After`, a client that leaves while waiting gives its place
 * back, a decode-bound cluster sends no new prefill to its idle P, and preemption cuts an admitted
 * request that has sent nothing but never one that is streaming. The ledger is back to zero after each.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import type { Behaviour } from './fixtures/proxy/fake-engine.ts';
import { P_ID, startHarness, until, type Harness } from './fixtures/proxy/harness.ts';
import { gate, type Gate } from './fixtures/proxy/responders.ts';

let h: Harness | undefined;
afterEach(async () => {
  if (h !== undefined) {
    await h.settled();
    expect(h.ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
    expect(h.admission?.snapshot()).toMatchObject({ inFlight: 0, queued: 0, queuedBytes: 0 });
    await h.close();
  }
  h = undefined;
});

const body = { model: 'test-model', prompt: 'Once upon a time', max_tokens: 4 };
const streaming = { ...body, stream: true };

/** A D stream that writes its first chunk, then waits for `hold` before the rest. */
function heldStream(hold: Gate): Behaviour {
  return {
    kind: 'stream',
    steps: [
      { write: 'data: {"choices":[{"index":0,"text":"a"}]}\n\n' },
      { wait: hold.promise },
      { write: 'data: {"choices":[{"index":0,"text":"b","finish_reason":"length"}]}\n\n' },
      { write: 'data: [DONE]\n\n' },
    ],
  };
}

/** A P answer held until `hold` opens. */
function heldPrefill(hold: Gate, host: string): Behaviour {
  const answer = {
    id: 'cmpl-held',
    object: 'text_completion',
    choices: [{ index: 0, text: 'x', finish_reason: 'length' }],
    kv_transfer_params: {
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: [1],
      remote_engine_id: 'engine-held',
      remote_request_id: 'held',
      remote_host: host,
      remote_port: 1,
      tp_size: 1,
    },
  };
  return { kind: 'stream', contentType: 'application/json', steps: [{ wait: hold.promise }, { write: JSON.stringify(answer) }] };
}

async function errorOf(res: Response): Promise<{ code: string; type: string; message: string }> {
  return ((await res.json()) as { error: { code: string; type: string; message: string } }).error;
}

describe('admission on the inference path', () => {
  test('a decode-bound cluster queues new requests (P stays idle) and serves the higher class first', async () => {
    h = await startHarness({ admission: { decode: { max_in_flight_per_instance: 1 } } });
    const hold = gate();
    h.ds[0]!.script.push(heldStream(hold));
    const first = await h.post('/v1/completions', streaming, { 'x-request-id': 'first' });
    expect(first.status).toBe(200);
    const reader = first.body!.getReader();
    await reader.read();
    // D holds its one request; P answered it and is idle. Two more arrive: batch, then interactive.
    const batch = h.post('/v1/completions', body, { 'x-request-id': 'batch', 'x-pdlink-priority': 'batch' });
    await until(() => h!.admission!.queued === 1, 'the batch request to wait');
    const interactive = h.post('/v1/completions', body, { 'x-request-id': 'interactive' });
    await until(() => h!.admission!.queued === 2, 'both to wait');
    expect(h.ps[0]!.requests).toHaveLength(1);
    expect(h.admission!.snapshot().stages.decode.room).toBe(0);
    expect(h.admission!.snapshot().stages.prefill.room).toBeGreaterThan(0);
    hold.open();
    while (!(await reader.read()).done);
    const [b, i] = await Promise.all([batch, interactive]);
    expect([b.status, i.status]).toEqual([200, 200]);
    await Promise.all([b.arrayBuffer(), i.arrayBuffer()]);
    expect(h.ds[0]!.requests.map((r) => r.headers['x-request-id'])).toEqual(['first', 'interactive', 'batch']);
    expect(await h.metric('pdlink_admission_admitted_total', { class: 'interactive', how: 'queued' })).toBe(1);
    expect(await h.metric('pdlink_admission_admitted_total', { class: 'batch', how: 'queued' })).toBe(1);
    expect(await h.metric('pdlink_admission_admitted_total', { class: 'interactive', how: 'immediate' })).toBe(1);
  });

  test('a wait that runs out: 429 in OpenAI’s shape with Retry-After, counted, nothing sent', async () => {
    h = await startHarness({
      admission: {
        classes: [{ name: 'interactive', queue_timeout_ms: 50 }],
        retry_after_seconds: 2,
        decode: { max_in_flight_per_instance: 1 },
      },
    });
    const hold = gate();
    h.ds[0]!.script.push(heldStream(hold));
    const first = await h.post('/v1/completions', streaming);
    const reader = first.body!.getReader();
    await reader.read();
    const res = await h.post('/v1/completions', body, { 'x-request-id': 'late', 'x-pdlink-tenant': 'acme' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(res.headers.get('x-request-id')).toBe('late');
    const error = await errorOf(res);
    expect(error).toMatchObject({ code: 'queue_timeout', type: 'rate_limit_error' });
    expect(error.message).toContain('50 ms');
    expect(h.ps[0]!.requests).toHaveLength(1);
    expect(await h.metric('pdlink_admission_shed_total', { class: 'interactive', tenant: 'acme', reason: 'timeout' })).toBe(1);
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'rejected' })).toBe(1);
    hold.open();
    while (!(await reader.read()).done);
  });

  test('a client that leaves while waiting gives back its place and its body', async () => {
    h = await startHarness({ admission: { decode: { max_in_flight_per_instance: 1 } } });
    const hold = gate();
    h.ds[0]!.script.push(heldStream(hold));
    const first = await h.post('/v1/completions', streaming);
    const reader = first.body!.getReader();
    await reader.read();
    const leaving = new AbortController();
    const big = { ...body, prompt: 'z'.repeat(20_000) };
    const gone = fetch(`${h.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(big),
      signal: leaving.signal,
    }).catch((err: unknown) => err);
    await until(() => h!.admission!.queued === 1, 'the request to wait');
    expect(h.admission!.snapshot().queuedBytes).toBeGreaterThan(20_000);
    leaving.abort();
    await gone;
    await until(() => h!.admission!.queued === 0, 'the place to be given back');
    expect(h.admission!.snapshot().queuedBytes).toBe(0);
    expect(await h.metric('pdlink_admission_cancelled_total', { class: 'interactive' })).toBe(1);
    hold.open();
    while (!(await reader.read()).done);
    // The one that left never reached an instance.
    expect(h.ps[0]!.requests).toHaveLength(1);
  });

  test('preemption cuts the newest admitted request that has sent nothing, never a streaming one', async () => {
    h = await startHarness({ prefill: 2, admission: { preemption: true, decode: { max_in_flight_per_instance: 2 } } });
    const streamHold = gate();
    const prefillHold = gate();
    // A batch request is admitted first and held at its P; a second batch request, admitted after it
    // (the newest, the first a cut would pick), streams.
    for (const p of h.ps) p.script.push(heldPrefill(prefillHold, p.host));
    const cut = h.post('/v1/completions', body, { 'x-request-id': 'at-p', 'x-pdlink-priority': 'batch' });
    await until(() => h!.ps.some((p) => p.requests.length === 1), 'the first request to reach a P');
    const heldAt = h.ps.find((p) => p.requests.length === 1)!;
    for (const p of h.ps) if (p !== heldAt) p.script.length = 0;
    h.ds[0]!.script.push(heldStream(streamHold));
    const first = await h.post('/v1/completions', streaming, { 'x-request-id': 'streaming', 'x-pdlink-priority': 'batch' });
    const reader = first.body!.getReader();
    const firstChunk = await reader.read();
    // D is full: the interactive request cuts the one held at P, not the stream.
    const high = await h.post('/v1/completions', body, { 'x-request-id': 'high' });
    expect(high.status).toBe(200);
    await high.arrayBuffer();
    const cutRes = await cut;
    expect(cutRes.status).toBe(503);
    expect(cutRes.headers.get('retry-after')).toBe('1');
    expect((await errorOf(cutRes)).code).toBe('preempted');
    expect(h.transfer('at-p')).toMatchObject({ state: 'failed', code: 'preempted' });
    expect(h.scheduler.health.state(P_ID(h.ps.indexOf(heldAt)))).toBe('closed');
    expect(await h.metric('pdlink_pd_requests_total', { api: 'completions', outcome: 'preempted' })).toBe(1);
    expect(await h.metric('pdlink_admission_shed_total', { class: 'batch', reason: 'preempted' })).toBe(1);
    // The stream goes on to its end, whole.
    streamHold.open();
    prefillHold.open();
    let text = new TextDecoder().decode(firstChunk.value);
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    expect(text).toContain('"text":"b"');
    expect(text).toContain('[DONE]');
  });

  test('past request_limit.max_requests a request waits instead of the instant 429', async () => {
    h = await startHarness({ admission: {}, settings: { maxInFlight: 1 } });
    const hold = gate();
    h.ds[0]!.script.push(heldStream(hold));
    const first = await h.post('/v1/completions', streaming);
    const reader = first.body!.getReader();
    await reader.read();
    const second = h.post('/v1/completions', body);
    await until(() => h!.admission!.queued === 1, 'the second request to wait');
    expect(h.proxy.inFlight()).toBe(1);
    hold.open();
    while (!(await reader.read()).done);
    const res = await second;
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
});
