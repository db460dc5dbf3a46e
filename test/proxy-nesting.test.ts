/**
 * A completion body the client made pathological (100,000 nested arrays in a field the proxy does
 * not read, 200 KB) is the client's error: 400 with an OpenAI error body, no P is asked or charged,
 * nothing is retried, and the next valid request is served as if nothing happened. The same answer
 * from a P is that P's fault, and only that P's.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { MAX_JSON_DEPTH } from '../src/core/limits.ts';
import type { Responder } from './fixtures/proxy/fake-engine.ts';
import { D_ID, P_ID, startHarness, type Harness } from './fixtures/proxy/harness.ts';
import { prefillResponder } from './fixtures/proxy/responders.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const valid = { model: 'test-model', prompt: 'Tell me a story', max_tokens: 4 };

function withNesting(levels: number, kind: 'completions' | 'chat'): string {
  const base =
    kind === 'chat' ? { model: 'test-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 } : { ...valid, max_tokens: 4 };
  return JSON.stringify(base).replace(/}$/, `,"extra":${'['.repeat(levels)}${']'.repeat(levels)}}`);
}

describe('nesting on the inference listener', () => {
  test.each(['completions', 'chat'] as const)(
    '/v1/%s: 100,000 nested arrays → 400, no instance charged, the next request served',
    async (kind) => {
      // One failure opens a circuit: a single charge against a P would show.
      h = await startHarness({ prefill: 2, decode: 1, failureThreshold: 1 });
      const path = kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
      for (let i = 0; i < 3; i++) {
        const res = await h.post(path, withNesting(100_000, kind), { 'x-request-id': `deep-${i}` });
        expect(res.status).toBe(400);
        expect(res.headers.get('x-request-id')).toBe(`deep-${i}`);
        const body = (await res.json()) as { error: { message: string; type: string; code: string } };
        expect(body.error.type).toBe('invalid_request_error');
        expect(body.error.code).toBe('bad_request');
        expect(body.error.message).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
      }
      expect(h.ps.map((p) => p.requests.length)).toEqual([0, 0]);
      expect(h.ds[0]!.requests).toHaveLength(0);
      for (const id of [P_ID(0), P_ID(1), D_ID(0)]) expect(h.scheduler.health.state(id)).toBe('closed');
      expect(await h.sample('pdlink_pd_retries_total{reason="transport"}')).toBe(0);
      expect(await h.sample('pdlink_pd_retries_total{reason="bad_answer"}')).toBe(0);
      expect(await h.metric('pdlink_pd_requests_total', { outcome: 'invalid' })).toBe(3);
      expect(h.ledger.totals().failed).toBe(0);

      // Both P's still take requests (round robin: one each).
      for (let i = 0; i < 2; i++) {
        const body = kind === 'chat' ? { model: 'test-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 } : valid;
        const res = await h.post(path, body);
        expect(res.status).toBe(200);
        await res.text();
      }
      expect(h.ps.map((p) => p.requests.length)).toEqual([1, 1]);
      await h.settled();
    },
  );

  test(`a body nested exactly ${MAX_JSON_DEPTH} levels is forwarded to both legs as sent`, async () => {
    h = await startHarness({ prefill: 1, decode: 1 });
    // The body is level 1 and "extra" holds the remaining levels.
    const res = await h.post('/v1/completions', withNesting(MAX_JSON_DEPTH - 1, 'completions'));
    expect(res.status).toBe(200);
    await res.text();
    const nested = `${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}`;
    expect(h.ps[0]!.requests[0]!.text).toContain(`"extra":${nested}`);
    expect(h.ds[0]!.requests[0]!.text).toContain(`"extra":${nested}`);
    await h.settled();
  });

  test('a P whose answer nests 100,000 levels is that P’s failure: retried on the other P, D never sees it', async () => {
    let answered = false;
    const deepFirst: Responder = (request, engine) => {
      if (answered) return prefillResponder(request, engine);
      answered = true;
      const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
      return { kind: 'raw', status: 200, contentType: 'application/json', body: `{"kv_transfer_params":${deep}}` };
    };
    h = await startHarness({ prefill: 2, decode: 1, failureThreshold: 1, prefillResponder: deepFirst });
    const res = await h.post('/v1/completions', valid);
    expect(res.status).toBe(200);
    await res.text();
    expect(h.ps.map((p) => p.requests.length)).toEqual([1, 1]);
    expect(h.ds[0]!.requests).toHaveLength(1);
    expect(h.ds[0]!.requests[0]!.text.length).toBeLessThan(10_000);
    expect(await h.sample('pdlink_pd_retries_total{reason="bad_answer"}')).toBe(1);
    // Round robin asked P 0 first: its circuit opened (threshold 1); the other P and D are fine.
    expect(h.scheduler.health.state(P_ID(0))).toBe('open');
    expect(h.scheduler.health.state(P_ID(1))).toBe('closed');
    expect(h.scheduler.health.state(D_ID(0))).toBe('closed');
    await h.settled();
  });
});
