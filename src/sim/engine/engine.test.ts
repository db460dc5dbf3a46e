import { describe, expect, test } from 'bun:test';
import { SIM_TOTAL_SLOTS, SimEngine, type SimEngineOptions } from './engine.ts';
import { simControlApp } from './http/control-app.ts';
import { simInferenceApp } from './http/inference-app.ts';
import { MemoryFabric, SIM_CACHE_ID } from './kv/kv-port.ts';
import { generatedTokens, promptHash, tokenize, chatTemplate } from './model/tokens.ts';

const P_CLUSTER = 1001n;
const D_CLUSTER = 2002n;
const BASE = {
  model: 'sim',
  numBlocks: 64,
  blockBytes: 256,
  blockTokens: 4,
  prefillMsPerToken: 0,
  decodeMsPerToken: 0,
  maxModelLen: 512,
  kvLeaseMs: 60_000,
  pullTimeoutMs: 1000,
};

function pair(overrides: Partial<SimEngineOptions> = {}) {
  const fabric = new MemoryFabric();
  const p = new SimEngine({
    ...BASE,
    role: 'prefill',
    devices: [{ endpoint: '0', clusterId: P_CLUSTER }],
    kv: fabric.kv([{ endpoint: '0', clusterId: P_CLUSTER }]),
    ...overrides,
  });
  const released: string[] = [];
  const d = new SimEngine({
    ...BASE,
    role: 'decode',
    devices: [{ endpoint: '0', clusterId: D_CLUSTER }],
    kv: fabric.kv([{ endpoint: '0', clusterId: D_CLUSTER }]),
    crash: () => {},
    notifyDone: async (_host, _port, id) => {
      released.push(id);
      p.releaseExport(id);
    },
    ...overrides,
  });
  p.notifyAddress = { host: '127.0.0.9', port: 4242 };
  return { fabric, p, d, released, pApp: simInferenceApp(p), dApp: simInferenceApp(d), pControl: simControlApp(p) };
}

const post = (app: ReturnType<typeof simInferenceApp>, path: string, body: unknown, requestId = 'req-1') =>
  app.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify(body),
  });

const PROMPT = 'a prompt long enough to fill a few blocks of four tokens each';
const prefillBody = (extra: Record<string, unknown> = {}) => ({
  model: 'sim',
  prompt: PROMPT,
  max_tokens: 1,
  stream: false,
  kv_transfer_params: { do_remote_decode: true },
  ...extra,
});

async function prefill(env: ReturnType<typeof pair>, requestId = 'req-1') {
  const res = await post(env.pApp, '/v1/completions', prefillBody(), requestId);
  expect(res.status).toBe(200);
  return (await res.json()) as { choices: { text: string }[]; kv_transfer_params: Record<string, unknown>; usage: Record<string, number> };
}

describe('SimEngine over an in-memory KV fabric', () => {
  test('the prefill leg writes the prompt blocks and names them in kv_transfer_params', async () => {
    const env = pair();
    await env.p.start();
    const answer = await prefill(env);
    const tokens = tokenize(PROMPT);
    const blocks = Math.ceil(tokens.length / 4);
    expect(answer.choices[0]!.text).toBe(generatedTokens(promptHash(tokens), 1)[0]!);
    expect(answer.usage).toEqual({ prompt_tokens: tokens.length, completion_tokens: 1, total_tokens: tokens.length + 1 });
    expect(answer.kv_transfer_params).toEqual({
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: Array.from({ length: blocks }, (_, i) => i),
      remote_engine_id: P_CLUSTER.toString(),
      remote_request_id: 'req-1#1',
      remote_host: '127.0.0.9',
      remote_port: 4242,
      tp_size: 1,
    });
    expect(env.p.stats().kv.blocks_used).toBe(blocks);
    expect(env.p.log.list('req-1')[0]).toMatchObject({ leg: 'prefill', outcome: 'ok', blocks, engineId: P_CLUSTER.toString() });
  });

  test('the decode leg pulls, verifies, frees P and streams max_tokens tokens', async () => {
    const env = pair();
    await env.p.start();
    await env.d.start();
    env.fabric.link(P_CLUSTER, D_CLUSTER);
    const { kv_transfer_params } = await prefill(env);
    const res = await post(env.dApp, '/v1/completions', {
      model: 'sim',
      prompt: PROMPT,
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
      kv_transfer_params,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const text = await res.text();
    const events = text
      .trim()
      .split('\n\n')
      .map((e) => e.replace(/^data: /, ''));
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    const pieces = chunks.filter((c) => c.choices.length > 0).map((c) => c.choices[0].text);
    expect(pieces).toEqual(generatedTokens(promptHash(tokenize(PROMPT)), 5));
    expect(chunks.at(-2).choices[0].finish_reason).toBe('length');
    expect(chunks.at(-1).usage.completion_tokens).toBe(5);
    const record = env.d.log.list('req-1')[0]!;
    expect(record).toMatchObject({ leg: 'decode', outcome: 'ok', verified: true, completionTokens: 5 });
    expect(record.digest).toBe(new Bun.CryptoHasher('sha256').update(text).digest('hex'));
    expect(record.bytesPulled).toBe(record.blocks * 256);
    expect(env.released).toEqual(['req-1#1']);
    expect(env.p.stats().kv.blocks_used).toBe(0);
    expect(env.d.stats().kv.blocks_used).toBe(0);
  });

  test('a repeated prefix is a prefix-cache hit on P, and a decoder holds what it pulled for a local prefill', async () => {
    const env = pair();
    await env.p.start();
    await env.d.start();
    env.fabric.link(P_CLUSTER, D_CLUSTER);
    const tokens = tokenize(PROMPT);
    const full = Math.floor(tokens.length / 4) * 4;
    const { kv_transfer_params } = await prefill(env, 'req-1');
    await prefill(env, 'req-2');
    expect(env.p.log.list('req-1')[0]!.cachedTokens).toBe(0);
    expect(env.p.log.list('req-2')[0]!.cachedTokens).toBe(full);
    expect(env.p.stats().prefix_cache).toMatchObject({ lookups: 2, hit_tokens: full, prompt_tokens: 2 * tokens.length });
    const decoded = await post(env.dApp, '/v1/completions', { model: 'sim', prompt: PROMPT, max_tokens: 2, kv_transfer_params });
    expect(decoded.status).toBe(200);
    await decoded.text();
    // The decode leg is not a lookup; the local prefill that follows finds the pulled prefix.
    expect(env.d.stats().prefix_cache.lookups).toBe(0);
    const local = await post(env.dApp, '/v1/completions', { model: 'sim', prompt: `${PROMPT} and more`, max_tokens: 2 }, 'req-3');
    expect(local.status).toBe(200);
    await local.text();
    // The longer prompt shares the whole four-byte tokens of PROMPT (its ragged last token differs).
    const shared = Math.floor(Math.floor(PROMPT.length / 4) / 4) * 4;
    expect(env.d.log.list('req-3')[0]).toMatchObject({ leg: 'local', cachedTokens: shared });
    expect(env.d.stats().prefix_cache).toMatchObject({ lookups: 1, hit_tokens: shared });
  });

  test('chat answers whole with the chat message shape', async () => {
    const env = pair();
    await env.p.start();
    await env.d.start();
    env.fabric.link(P_CLUSTER, D_CLUSTER);
    const messages = [{ role: 'user', content: 'hello there, simulated engine' }];
    const pre = await post(env.pApp, '/v1/chat/completions', {
      model: 'sim',
      messages,
      max_tokens: 1,
      kv_transfer_params: { do_remote_decode: true },
    });
    const { kv_transfer_params } = (await pre.json()) as { kv_transfer_params: unknown };
    const res = await post(env.dApp, '/v1/chat/completions', { model: 'sim', messages, max_tokens: 3, kv_transfer_params });
    const body = (await res.json()) as { object: string; choices: { message: { role: string; content: string } }[] };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]!.message).toEqual({
      role: 'assistant',
      content: generatedTokens(promptHash(tokenize(chatTemplate(messages))), 3).join(''),
    });
  });

  test('corrupted KV bytes fail verification with a 500 naming the block', async () => {
    const env = pair();
    await env.p.start();
    await env.d.start();
    env.fabric.link(P_CLUSTER, D_CLUSTER);
    const { kv_transfer_params } = await prefill(env);
    const ids = kv_transfer_params['remote_block_ids'] as number[];
    env.fabric.poke(P_CLUSTER, SIM_CACHE_ID, ids[1]!, 7, 0);
    env.fabric.poke(P_CLUSTER, SIM_CACHE_ID, ids[1]!, 8, 0);
    const res = await post(env.dApp, '/v1/completions', { model: 'sim', prompt: PROMPT, max_tokens: 2, kv_transfer_params });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: { message: string; code: number } };
    expect(body.error.message).toMatch(/^KV verification failed: block 1 \(remote block \d+\) byte [78] /);
    expect(body.error.code).toBe(500);
    expect(env.d.stats().kv).toMatchObject({ verify_failures: 1, blocks_used: 0 });
  });

  test('the corrupt_kv fault is caught the same way', async () => {
    const env = pair();
    await env.p.start();
    await env.d.start();
    env.fabric.link(P_CLUSTER, D_CLUSTER);
    const armed = await env.pControl.request('/sim/faults', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ corrupt_kv: {} }),
    });
    expect(((await armed.json()) as { corrupt_kv: unknown }).corrupt_kv).toEqual({ count: 1 });
    const { kv_transfer_params } = await prefill(env);
    const res = await post(env.dApp, '/v1/completions', { model: 'sim', prompt: PROMPT, max_tokens: 2, kv_transfer_params });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('KV verification failed');
  });

  test('no link to the prefiller: 503; block list of the wrong length: 400', async () => {
    const env = pair();
    await env.p.start();
    await env.d.start();
    const { kv_transfer_params } = await prefill(env);
    const unlinked = await post(env.dApp, '/v1/completions', { model: 'sim', prompt: PROMPT, kv_transfer_params });
    expect(unlinked.status).toBe(503);
    expect(((await unlinked.json()) as { error: { message: string } }).error.message).toBe(
      `no link to prefill engine ${P_CLUSTER}: cannot pull its KV blocks`,
    );
    const short = await post(env.dApp, '/v1/completions', {
      model: 'sim',
      prompt: PROMPT,
      kv_transfer_params: { ...kv_transfer_params, remote_block_ids: [0] },
    });
    expect(short.status).toBe(400);
    expect(((await short.json()) as { error: { param: string } }).error.param).toBe('kv_transfer_params.remote_block_ids');
  });

  test('faults answer the next N legs with their status, then the engine behaves', async () => {
    const env = pair();
    await env.p.start();
    const arm = await env.pControl.request('/sim/faults', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prefill_status: { status: 500, count: 2 } }),
    });
    expect(arm.status).toBe(200);
    expect((await post(env.pApp, '/v1/completions', prefillBody())).status).toBe(500);
    expect((await post(env.pApp, '/v1/completions', prefillBody())).status).toBe(500);
    expect((await post(env.pApp, '/v1/completions', prefillBody())).status).toBe(200);
  });

  test('bad faults are refused with 422 naming the field', async () => {
    const env = pair();
    const res = await env.pControl.request('/sim/faults', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prefill_status: { status: 200 }, typo: 1 }),
    });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { issues: { path: string }[] };
    expect(body.issues.map((i) => i.path).sort()).toEqual(['prefill_status.status', 'typo']);
  });

  test('request errors: wrong model 404, too long 400, bad fields 400, not JSON 400', async () => {
    const env = pair();
    const wrongModel = await post(env.pApp, '/v1/completions', { model: 'other', prompt: 'x' });
    expect(wrongModel.status).toBe(404);
    const tooLong = await post(env.pApp, '/v1/completions', { model: 'sim', prompt: 'x'.repeat(4 * 600), max_tokens: 1 });
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as { error: { message: string } }).error.message).toContain('maximum context length is 512 tokens');
    const bad = await post(env.pApp, '/v1/completions', { model: 'sim', prompt: 'x', max_tokens: 0, stream: 'yes' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/max_tokens.*stream|stream.*max_tokens/);
    const notJson = await env.pApp.request('/v1/completions', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hi' });
    expect(notJson.status).toBe(400);
    const badParams = await post(env.pApp, '/v1/completions', {
      model: 'sim',
      prompt: 'x',
      kv_transfer_params: { do_remote_prefill: true, remote_block_ids: [-1] },
    });
    expect(badParams.status).toBe(400);
    expect(((await badParams.json()) as { error: { param: string } }).error.param).toMatch(/^kv_transfer_params\./);
  });

  test('a request served alone, and the models list', async () => {
    const env = pair();
    const res = await post(env.pApp, '/v1/completions', { model: 'sim', prompt: [5, 6, 7], max_tokens: 4 });
    const body = (await res.json()) as { choices: { text: string }[] };
    expect(body.choices[0]!.text).toBe(generatedTokens(promptHash([5, 6, 7]), 4).join(''));
    const models = (await (await env.pApp.request('/v1/models')).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['sim']);
    expect((await env.pApp.request('/health')).status).toBe(200);
  });

  test('a released or expired export frees P; an unknown one frees nothing', async () => {
    const env = pair();
    await env.p.start();
    const { kv_transfer_params } = await prefill(env);
    const release = (id: string) =>
      env.pControl.request('/sim/kv/release', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ remote_request_id: id }),
      });
    expect(await (await release('nope')).json()).toEqual({ released_blocks: 0 });
    const freed = (await (await release(kv_transfer_params['remote_request_id'] as string)).json()) as { released_blocks: number };
    expect(freed.released_blocks).toBeGreaterThan(0);
    expect(env.p.stats().kv.blocks_used).toBe(0);
    // 'nope' named blocks P never held; a second notice for the same blocks came from a decoder that
    // read them after they were freed: both are stale.
    expect(env.p.stats().kv.stale_releases).toBe(1);
    expect(await (await release(kv_transfer_params['remote_request_id'] as string)).json()).toEqual({ released_blocks: 0 });
    expect(env.p.stats().kv.stale_releases).toBe(2);
    expect(
      (await env.pControl.request('/sim/kv/release', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }))
        .status,
    ).toBe(422);
  });

  test('a full cache answers 503', async () => {
    const env = pair({ numBlocks: 2 });
    await env.p.start();
    const res = await post(env.pApp, '/v1/completions', prefillBody());
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /^KV cache full: \d+ blocks needed, 2 free on device 0$/,
    );
  });

  test('a paced stream sends one event per token and stops when the caller aborts', async () => {
    const env = pair({ decodeMsPerToken: 1 });
    const controller = new AbortController();
    const ok = await env.pApp.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'paced' },
      body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'pace me' }], max_tokens: 400, stream: true }),
      signal: controller.signal,
    });
    const reader = ok.body!.getReader();
    const decoder = new TextDecoder();
    const first = JSON.parse(decoder.decode((await reader.read()).value).replace(/^data: /, '')) as { choices: { delta: unknown }[] };
    expect(first.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const second = decoder.decode((await reader.read()).value);
    expect(second.match(/^data: /gm)).toHaveLength(1);
    controller.abort();
    await reader.cancel();
    const record = env.p.log.list('paced').at(-1)!;
    expect(record.outcome).toBe('aborted');
    expect(record.completionTokens).toBeLessThan(400);
  });

  test('the crash fault breaks the answer when the crash hook returns (in-process engines)', async () => {
    const env = pair({ decodeMsPerToken: 1 });
    await env.p.start();
    await env.d.start();
    env.fabric.link(P_CLUSTER, D_CLUSTER);
    await simControlApp(env.d).request('/sim/faults', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decode_crash: { after_tokens: 0 } }),
    });
    const { kv_transfer_params } = await prefill(env);
    const res = await post(env.dApp, '/v1/completions', { model: 'sim', prompt: PROMPT, max_tokens: 2, kv_transfer_params });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe('simulated engine crash');
    expect(env.d.stats().kv.blocks_used).toBe(0);
  });
});

describe('SimEngine resources', () => {
  test('report free slots and blocks: blocks a prefill holds for its decoder count as used until released', async () => {
    const env = pair();
    await env.p.start();
    expect(env.p.resources()).toEqual({
      totalSlotsNum: SIM_TOTAL_SLOTS,
      availSlotsNum: SIM_TOTAL_SLOTS,
      totalBlockNum: 64,
      availBlockNum: 64,
    });
    const answer = await prefill(env);
    const held = Math.ceil(tokenize(PROMPT).length / 4);
    expect(env.p.resources()).toMatchObject({ availSlotsNum: SIM_TOTAL_SLOTS, availBlockNum: 64 - held });
    env.p.releaseExport(String(answer.kv_transfer_params['remote_request_id']));
    expect(env.p.resources().availBlockNum).toBe(64);
  });
});
