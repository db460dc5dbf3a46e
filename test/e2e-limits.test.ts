/**
 * End to end on a simulated cluster (one prefill and one decode engine; the Coordinator admits two
 * requests at once, admission off): the request beyond the in-flight limit gets 429, a snapshot
 * without decode instances gets 503, both with OpenAI-style error bodies, and nothing stays reserved.
 * (With admission on, the default, the request beyond the limit waits instead: test/admission.test.ts.)
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { proxyPost, settled, SimCluster } from './support/sim-cluster.ts';

const MODEL = 'e2e-limits';
let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 1,
    decode: 1,
    model: MODEL,
    engine: { decodeMsPerToken: 2 },
    coordinatorConfig: { request_limit: { max_requests: 2 }, pdlink: { admission: { enabled: false } } },
  });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

afterEach(async () => {
  await settled(cluster);
});

const body = (maxTokens: number) => ({
  model: MODEL,
  prompt: 'Limits are answered at once, with a reason.',
  max_tokens: maxTokens,
  stream: true,
});

describe('limits', () => {
  test('beyond max_requests in flight: 429 at once, with an error body', async () => {
    const controllers = [new AbortController(), new AbortController()];
    const open = await Promise.all(
      controllers.map((c, i) => proxyPost(cluster, '/v1/completions', body(3000), `e2e-limit-open-${i}`, c.signal)),
    );
    // Both are streaming (their first bytes arrived), so both are in flight.
    const readers = open.map((res) => res.body!.getReader());
    for (const reader of readers) expect((await reader.read()).done).toBe(false);
    const refused = await proxyPost(cluster, '/v1/completions', body(4), 'e2e-limit-refused');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-request-id')).toBe('e2e-limit-refused');
    const error = ((await refused.json()) as { error: { type: string; code: string; message: string } }).error;
    expect(error).toMatchObject({ type: 'rate_limit_error', code: 'too_many_requests', message: 'more than 2 requests in flight' });
    for (const c of controllers) c.abort();
    // Once the two have gone, a request is admitted again.
    await settled(cluster);
    const admitted = await proxyPost(cluster, '/v1/completions', body(2), 'e2e-limit-after');
    expect(admitted.status).toBe(200);
    await admitted.arrayBuffer();
  });

  test('no decode instance registered: 503 with an error body', async () => {
    await cluster.refresh({ exclude: ['d0'] });
    try {
      const res = await proxyPost(cluster, '/v1/completions', body(4), 'e2e-no-decode');
      expect(res.status).toBe(503);
      const error = ((await res.json()) as { error: { type: string; message: string } }).error;
      expect(error.type).toBe('server_error');
      expect(error.message).toMatch(/decode/i);
      const ready = await fetch(`${cluster.coordinatorUrl}/v1/readiness`);
      expect(ready.status).toBe(503);
    } finally {
      await cluster.refresh();
    }
    const res = await proxyPost(cluster, '/v1/completions', body(2), 'e2e-decode-back');
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
});
