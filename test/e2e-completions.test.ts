/**
 * End to end on a simulated cluster (a Coordinator, two prefill and one decode `pdlink sim-engine`
 * processes with two devices each, real links and real KV bytes): what the client gets through
 * the proxy is exactly what D produced, both legs carry the client's X-Request-Id, D pulled and
 * verified the prompt's KV blocks, P failures are retried or passed through, corrupted KV never
 * reaches the client as a 200, and a client that leaves aborts the running leg and releases
 * everything.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { chatTemplate, generatedTokens, promptHash, tokenize } from '../src/sim/engine/model/tokens.ts';
import { legs, legsWhen, proxyPost, settled, sha256, SimCluster, sseData } from './support/sim-cluster.ts';

const MODEL = 'e2e-sim';
const BLOCK_TOKENS = 16;
const BLOCK_BYTES = 4096;
let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 2,
    decode: 1,
    devices: 2,
    model: MODEL,
    engine: { numBlocks: 2048, blockBytes: BLOCK_BYTES, blockTokens: BLOCK_TOKENS, decodeMsPerToken: 1, maxModelLen: 4096 },
    coordinatorConfig: { proxy_config: { backoff_base_ms: 1, backoff_cap_ms: 5 } },
  });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

afterEach(async () => {
  await Promise.all(cluster.engines.map((e) => fetch(`${e.manageUrl}/sim/faults`, { method: 'DELETE' })));
  await settled(cluster);
});

const prompt = (n: number) => `Request ${n}: describe how the prefill instance hands its KV cache to the decode instance. `.repeat(3);
const expected = (tokens: readonly number[], count: number) => generatedTokens(promptHash(tokens), count);

describe('completions and chat through the proxy', () => {
  test('streaming completions: the bytes D sent, one request id on both legs, verified KV', async () => {
    const id = 'e2e-stream-completions';
    const text = prompt(1);
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: text, max_tokens: 12, stream: true }, id);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(id);
    expect(res.headers.get('content-type')).toStartWith('text/event-stream');
    const body = await res.text();
    const events = sseData(body);
    expect(events.at(-1)).toBe('[DONE]');
    const pieces = events.slice(0, -1).map((e) => (JSON.parse(e) as { choices: { text: string }[] }).choices[0]!.text);
    expect(pieces).toEqual(expected(tokenize(text), 12));

    const records = await legsWhen(cluster, id, (rs) => rs.length === 2 && rs.every((r) => r.outcome !== 'running'));
    const p = records.find((r) => r.leg === 'prefill')!;
    const d = records.find((r) => r.leg === 'decode')!;
    expect(p.engine).toMatch(/^p[01]$/);
    expect(d.engine).toBe('d0');
    expect(d.digest).toBe(sha256(body));
    const blocks = Math.ceil(tokenize(text).length / BLOCK_TOKENS);
    expect(p.blocks).toBe(blocks);
    expect(d).toMatchObject({
      status: 200,
      outcome: 'ok',
      verified: true,
      blocks,
      bytesPulled: blocks * BLOCK_BYTES,
      completionTokens: 12,
    });
  });

  test('non-streaming completions: the JSON body D sent, byte for byte', async () => {
    const id = 'e2e-whole-completions';
    const text = prompt(2);
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: text, max_tokens: 7 }, id);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(id);
    const body = await res.text();
    const parsed = JSON.parse(body) as {
      object: string;
      choices: { text: string; finish_reason: string }[];
      usage: { completion_tokens: number };
    };
    expect(parsed.object).toBe('text_completion');
    expect(parsed.choices[0]).toMatchObject({ text: expected(tokenize(text), 7).join(''), finish_reason: 'length' });
    expect(parsed.usage.completion_tokens).toBe(7);
    const records = await legsWhen(cluster, id, (rs) => rs.length === 2);
    expect(records.find((r) => r.leg === 'decode')).toMatchObject({ digest: sha256(body), verified: true });
  });

  test('token-id prompts work the same way', async () => {
    const id = 'e2e-token-prompt';
    const tokens = Array.from({ length: 70 }, (_, i) => (i * 37) % 32000);
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: tokens, max_tokens: 3 }, id);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { text: string }[] }).choices[0]!.text).toBe(expected(tokens, 3).join(''));
    const records = await legsWhen(cluster, id, (rs) => rs.length === 2);
    expect(records.find((r) => r.leg === 'decode')).toMatchObject({ verified: true, blocks: 5 });
  });

  test('streaming chat: chat chunk shapes, the bytes D sent', async () => {
    const id = 'e2e-stream-chat';
    const messages = [
      { role: 'system', content: 'You are a careful assistant.' },
      { role: 'user', content: prompt(3) },
    ];
    const res = await proxyPost(
      cluster,
      '/v1/chat/completions',
      { model: MODEL, messages, max_tokens: 9, stream: true, stream_options: { include_usage: true } },
      id,
    );
    expect(res.status).toBe(200);
    const body = await res.text();
    const events = sseData(body);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map(
      (e) =>
        JSON.parse(e) as {
          object: string;
          choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[];
          usage?: { completion_tokens: number };
        },
    );
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const content = chunks.slice(1).flatMap((c) => c.choices.map((ch) => ch.delta.content ?? ''));
    expect(content).toEqual(expected(tokenize(chatTemplate(messages)), 9));
    expect(chunks.at(-1)!.usage!.completion_tokens).toBe(9);
    const records = await legsWhen(cluster, id, (rs) => rs.length === 2 && rs.every((r) => r.outcome !== 'running'));
    expect(records.find((r) => r.leg === 'decode')).toMatchObject({ digest: sha256(body), verified: true });
  });

  test('non-streaming chat: the assistant message D produced', async () => {
    const id = 'e2e-whole-chat';
    const messages = [{ role: 'user', content: prompt(4) }];
    const res = await proxyPost(cluster, '/v1/chat/completions', { model: MODEL, messages, max_tokens: 5 }, id);
    expect(res.status).toBe(200);
    const body = await res.text();
    const parsed = JSON.parse(body) as { object: string; choices: { message: { role: string; content: string } }[] };
    expect(parsed.object).toBe('chat.completion');
    expect(parsed.choices[0]!.message).toEqual({ role: 'assistant', content: expected(tokenize(chatTemplate(messages)), 5).join('') });
    const records = await legsWhen(cluster, id, (rs) => rs.length === 2);
    expect(records.find((r) => r.leg === 'decode')).toMatchObject({ digest: sha256(body), verified: true });
    expect(records.find((r) => r.leg === 'prefill')!.status).toBe(200);
  });

  test('a prefill instance answering 500 once is retried on the other one', async () => {
    // The policy decides which P comes first: arm the one that served last, until a request meets it.
    const warm = 'e2e-retry-warmup';
    expect((await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: prompt(5), max_tokens: 2 }, warm)).status).toBe(200);
    const armed = (await legsWhen(cluster, warm, (rs) => rs.length === 2)).find((r) => r.leg === 'prefill')!.engine;
    const other = armed === 'p0' ? 'p1' : 'p0';
    await cluster.faults(armed, { prefill_status: { status: 500, count: 1 } });
    let hit: string | undefined;
    for (let i = 0; i < 8 && hit === undefined; i++) {
      const id = `e2e-retry-${i}`;
      const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: prompt(6), max_tokens: 2 }, id);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const faults = (await (await fetch(`${cluster.engine(armed).manageUrl}/sim/faults`)).json()) as { prefill_status: unknown };
      if (faults.prefill_status === null) hit = id;
    }
    expect(hit).toBeDefined();
    const records = await legsWhen(cluster, hit!, (rs) => rs.length === 3);
    expect(
      records
        .filter((r) => r.leg === 'prefill')
        .map((r) => [r.engine, r.status])
        .sort(),
    ).toEqual(
      [
        [armed, 500],
        [other, 200],
      ].sort(),
    );
    expect(records.find((r) => r.leg === 'decode')).toMatchObject({ status: 200, verified: true });
  });

  test('a prefill instance answering 400 gives the client that 400, and D is never called', async () => {
    const id = 'e2e-prefill-400';
    // 4100 tokens of prompt: over the engines' max_model_len of 4096.
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: 'abcd'.repeat(4100), max_tokens: 4 }, id);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-request-id')).toBe(id);
    const body = (await res.json()) as { error: { message: string; code: number } };
    expect(body.error.message).toContain('maximum context length is 4096 tokens');
    const records = await legs(cluster, id);
    expect(records.map((r) => [r.leg, r.status])).toEqual([['prefill', 400]]);
  });

  test("corrupted KV bytes are caught by D: a 502 with D's reason, never a 200", async () => {
    await Promise.all(cluster.prefills.map((p) => cluster.faults(p.name, { corrupt_kv: { count: 1 } })));
    const id = 'e2e-corrupt';
    const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: prompt(7), max_tokens: 4, stream: true }, id);
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('upstream_failed');
    expect(body.error.message).toMatch(/KV verification failed: block \d+ \(remote block \d+\) byte \d+/);
    const d = (await legsWhen(cluster, id, (rs) => rs.some((r) => r.leg === 'decode'))).find((r) => r.leg === 'decode')!;
    expect(d).toMatchObject({ status: 500, verified: false });
    expect((await cluster.simStatus('d0')).kv['verify_failures']).toBe(1);
  });

  test('a client leaving mid-stream aborts D and releases the reservation', async () => {
    const id = 'e2e-disconnect-decode';
    const controller = new AbortController();
    const res = await proxyPost(
      cluster,
      '/v1/completions',
      { model: MODEL, prompt: prompt(8), max_tokens: 3000, stream: true },
      id,
      controller.signal,
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    controller.abort();
    const records = await legsWhen(cluster, id, (rs) => rs.some((r) => r.leg === 'decode' && r.outcome !== 'running'));
    const d = records.find((r) => r.leg === 'decode')!;
    expect(d.outcome).toBe('aborted');
    expect(d.completionTokens).toBeLessThan(3000);
    // afterEach: the Coordinator holds nothing and no engine holds a block.
  });

  test('a client leaving during prefill aborts P; D is never called', async () => {
    const id = 'e2e-disconnect-prefill';
    await Promise.all(cluster.prefills.map((p) => cluster.faults(p.name, { stall_prefill: { ms: 60_000, count: 1 } })));
    const controller = new AbortController();
    const pending = proxyPost(
      cluster,
      '/v1/completions',
      { model: MODEL, prompt: prompt(9), max_tokens: 4, stream: true },
      id,
      controller.signal,
    ).catch((err: unknown) => err);
    await legsWhen(cluster, id, (rs) => rs.some((r) => r.leg === 'prefill' && r.outcome === 'running'));
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    const records = await legsWhen(cluster, id, (rs) => rs.every((r) => r.outcome !== 'running'));
    expect(records.map((r) => [r.leg, r.outcome])).toEqual([['prefill', 'aborted']]);
  });
});
