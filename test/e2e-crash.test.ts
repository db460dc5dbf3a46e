/**
 * End to end on a simulated cluster (one prefill and one decode `pdlink sim-engine` process): the
 * decode engine dies (SIGKILL, armed through its fault endpoint) before its first byte or in the
 * middle of a stream. The client gets a 502 with an error body, or an SSE error event after the
 * tokens already sent, never a hang or a clean-looking end; the Coordinator releases the
 * request, and the restarted engine serves again.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { generatedTokens, promptHash, tokenize } from '../src/sim/engine/model/tokens.ts';
import { legsWhen, proxyPost, settled, SimCluster, sseData } from './support/sim-cluster.ts';

const MODEL = 'e2e-crash';
let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 1,
    decode: 1,
    model: MODEL,
    engine: { decodeMsPerToken: 1 },
    coordinatorConfig: { proxy_config: { backoff_base_ms: 1, backoff_cap_ms: 5 } },
  });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

afterEach(async () => {
  if (!cluster.engine('d0').process.running()) await cluster.restart('d0');
  await settled(cluster);
});

const PROMPT = 'A decode engine that falls over must not leave the client hanging. '.repeat(2);

async function crashed(): Promise<number | string> {
  return cluster.engine('d0').process.exited;
}

describe('the decode engine dies', () => {
  test('before its first byte: 502 with an error body', async () => {
    await cluster.faults('d0', { decode_crash: { after_tokens: 0 } });
    const id = 'e2e-crash-before-first-byte';
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: PROMPT, max_tokens: 8, stream: true }, id);
    expect([502, 503]).toContain(res.status);
    expect(res.headers.get('content-type')).toStartWith('application/json');
    expect(res.headers.get('x-request-id')).toBe(id);
    const body = (await res.json()) as { error: { message: string; type: string; code: string } };
    expect(body.error.type).toBe('server_error');
    expect(body.error.message).toContain('decode instance 200');
    expect(await crashed()).toBe('SIGKILL');
  });

  test('before answering a non-streamed request: 502 with an error body', async () => {
    await cluster.faults('d0', { decode_crash: { after_tokens: 0 } });
    const res = await proxyPost(
      cluster,
      '/v1/chat/completions',
      { model: MODEL, messages: [{ role: 'user', content: PROMPT }], max_tokens: 8 },
      'e2e-crash-whole',
    );
    expect([502, 503]).toContain(res.status);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_failed');
    expect(await crashed()).toBe('SIGKILL');
  });

  test('mid-stream: the tokens sent, then an SSE error event, no [DONE]', async () => {
    // The restart in afterEach relinked D: this request is served by a fresh process.
    await cluster.faults('d0', { decode_crash: { after_tokens: 3 } });
    const id = 'e2e-crash-mid-stream';
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: PROMPT, max_tokens: 50, stream: true }, id);
    expect(res.status).toBe(200);
    const events = sseData(await res.text());
    expect(events).not.toContain('[DONE]');
    const last = JSON.parse(events.at(-1)!) as { error?: { message: string; code: string } };
    expect(last.error?.code).toBe('upstream_failed');
    expect(last.error?.message).toContain('decode instance 200');
    const pieces = events.slice(0, -1).map((e) => (JSON.parse(e) as { choices: { text: string }[] }).choices[0]!.text);
    expect(pieces).toEqual(generatedTokens(promptHash(tokenize(PROMPT)), 3));
    expect(await crashed()).toBe('SIGKILL');
  });

  test('after a restart the engine serves again', async () => {
    const id = 'e2e-crash-recovered';
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: PROMPT, max_tokens: 4 }, id);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const records = await legsWhen(cluster, id, (rs) => rs.length === 2);
    expect(records.find((r) => r.leg === 'decode')).toMatchObject({ verified: true, status: 200 });
  });
});
