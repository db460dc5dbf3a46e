/**
 * End to end in SGLang mode: the Coordinator (`pdlink.proxy.protocol: sglang`) in front of
 * `pdlink sim-engine --protocol sglang` processes. Both legs go out at once with P's bootstrap
 * fields; D waits for the room, pulls and verifies P's bytes over the runtime link, then
 * generates. Failures of either engine and a client that leaves end with the Coordinator and the
 * engines holding nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { generatedTokens, promptHash, tokenize } from '../src/sim/engine/model/tokens.ts';
import { legsWhen, proxyPost, reservations, settled, SimCluster, sseData } from './support/sim-cluster.ts';

const MODEL = 'e2e-sglang';
let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 1,
    decode: 1,
    model: MODEL,
    engine: { decodeMsPerToken: 1, protocol: 'sglang' },
    coordinatorConfig: { pdlink: { proxy: { protocol: 'sglang' } }, proxy_config: { backoff_base_ms: 1, backoff_cap_ms: 5 } },
  });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

afterEach(async () => {
  for (const name of ['p0', 'd0']) if (!cluster.engine(name).process.running()) await cluster.restart(name);
  await settled(cluster);
});

const PROMPT = 'Both legs leave at once and meet in a bootstrap room. '.repeat(3);
const TOKENS = tokenize(PROMPT);

describe('pdlink in front of SGLang-style engines', () => {
  test('a whole answer: D pulled and verified the prompt blocks P filed under the room', async () => {
    const id = 'sglang-whole';
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: PROMPT, max_tokens: 5 }, id);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { choices: { text: string }[] };
    expect(answer.choices[0]!.text).toBe(generatedTokens(promptHash(TOKENS), 5).join(''));
    const records = await legsWhen(cluster, id, (rs) => rs.length === 2 && rs.every((r) => r.outcome !== 'running'));
    expect(records.find((r) => r.leg === 'prefill')).toMatchObject({ status: 200, engine: 'p0' });
    const decode = records.find((r) => r.leg === 'decode')!;
    expect(decode).toMatchObject({ status: 200, verified: true, engine: 'd0' });
    expect(decode.blocks).toBeGreaterThan(0);
  });

  test('a stream: the tokens, then [DONE]', async () => {
    const id = 'sglang-stream';
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: PROMPT, max_tokens: 4, stream: true }, id);
    expect(res.status).toBe(200);
    const events = sseData(await res.text());
    expect(events.at(-1)).toBe('[DONE]');
    const pieces = events.slice(0, -1).map((e) => (JSON.parse(e) as { choices: { text: string }[] }).choices[0]!.text);
    expect(pieces.join('')).toBe(generatedTokens(promptHash(TOKENS), 4).join(''));
  });

  test('a batched prompt: one room per item, every item pulled and verified', async () => {
    const prompts = ['First prompt of a batch, long enough for blocks. '.repeat(2), 'Second prompt, also several blocks long. '.repeat(3)];
    const id = 'sglang-batch';
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: prompts, max_tokens: 3 }, id);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { choices: { index: number; text: string }[] };
    expect(answer.choices.map((c) => c.text)).toEqual(prompts.map((p) => generatedTokens(promptHash(tokenize(p)), 3).join('')));
    expect(answer.choices.map((c) => c.index)).toEqual([0, 1]);
    const items = await Promise.all(prompts.map((_, i) => legsWhen(cluster, `${id}/${i}`, (rs) => rs.length === 2)));
    for (const records of items) expect(records.find((r) => r.leg === 'decode')).toMatchObject({ status: 200, verified: true });
  });

  test("return_logprob: the prompt's logprobs come from P", async () => {
    const res = await proxyPost(
      cluster,
      '/v1/completions',
      { model: MODEL, prompt: PROMPT, max_tokens: 2, return_logprob: true },
      'sglang-logprobs',
    );
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { meta_info: { input_token_logprobs: [number, number][] } };
    expect(answer.meta_info.input_token_logprobs).toHaveLength(TOKENS.length);
    expect(answer.meta_info.input_token_logprobs[1]).toEqual([-1 / 8, 1]);
  });

  test('P killed mid-request: a 502, D dropped, nothing held', async () => {
    await cluster.faults('p0', { stall_prefill: { ms: 60_000, count: 1 } });
    const id = 'sglang-p-killed';
    const pending = proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: PROMPT, max_tokens: 4 }, id);
    await legsWhen(cluster, id, (rs) => rs.some((r) => r.leg === 'prefill'));
    cluster.engine('p0').process.child.kill('SIGKILL');
    const res = await pending;
    expect([502, 503]).toContain(res.status);
    const body = (await res.json()) as { error: { message: string } };
    // Whichever leg notices first is named: the proxy's leg to P, or D failing to reach P's bootstrap server.
    expect(body.error.message).toMatch(/prefill instance 100|decode instance 200 answered 500: bootstrap room/);
    expect(await reservations(cluster)).toEqual({ active: 0, slots: 0, blocks: 0 });
  });

  test('D killed mid-stream: the tokens sent, then an SSE error event, no [DONE]', async () => {
    await cluster.faults('d0', { decode_crash: { after_tokens: 3 } });
    const res = await proxyPost(
      cluster,
      '/v1/completions',
      { model: MODEL, prompt: PROMPT, max_tokens: 50, stream: true },
      'sglang-d-killed',
    );
    expect(res.status).toBe(200);
    const events = sseData(await res.text());
    expect(events).not.toContain('[DONE]');
    const last = JSON.parse(events.at(-1)!) as { error?: { code: string; message: string } };
    expect(last.error?.code).toBe('upstream_failed');
    expect(last.error?.message).toContain('decode instance');
    expect(await cluster.engine('d0').process.exited).toBe('SIGKILL');
  });

  test('a client that leaves mid-stream: the ledger is back to zero', async () => {
    const client = new AbortController();
    const res = await proxyPost(
      cluster,
      '/v1/completions',
      { model: MODEL, prompt: PROMPT, max_tokens: 2000, stream: true },
      'sglang-client-abort',
      client.signal,
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    client.abort();
    await reader.cancel().catch(() => {});
    // settled (afterEach) waits for the Coordinator and both engines to hold nothing.
  });
});
