import { afterEach, describe, expect, test } from 'bun:test';
import { createCoordinator, type Coordinator } from '../apps/coordinator.ts';
import { ClusterRegistry } from '../cluster/registry.ts';
import { parseRefresh } from '../schema/refresh.ts';
import { SEED_REFRESH_BODY } from '../../test/doubles/refresh-examples.ts';
import { modelList } from './models.ts';

/** The seed snapshot with each instance's model name, max_seq_len and role as given. */
function snapshot(instances: { model: string; maxSeqLen?: number; role?: number }[]) {
  const seed = JSON.parse(SEED_REFRESH_BODY) as { instances: Record<string, unknown>[] };
  const template = seed.instances[0]!;
  const body = {
    ids: instances.map((_, i) => i),
    instances: instances.map((instance, i) => {
      const staticInfo = { ...(template['static_info'] as Record<string, unknown>) };
      staticInfo['max_seq_len'] = instance.maxSeqLen ?? 2048;
      staticInfo['role'] = instance.role ?? 80;
      staticInfo['label'] = instance.role === 68 ? 3 : 2;
      return {
        ...template,
        id: i,
        port: String(2000 + i),
        model_name: instance.model,
        static_info: staticInfo,
        dynamic_info: { avail_slots_num: 200, avail_block_num: 1024, ...(instance.role === 68 ? { peers: [0] } : {}) },
      };
    }),
  };
  return parseRefresh(body);
}

describe('modelList', () => {
  test('one entry per model of the P and D instances, sorted, with the smallest max_seq_len; U instances left out', () => {
    const registry = new ClusterRegistry();
    let now = 1_700_000_000_123;
    const models = modelList(registry, () => now);
    expect(models.list()).toEqual({ object: 'list', data: [] });
    registry.apply(
      snapshot([
        { model: 'qwen', maxSeqLen: 4096 },
        { model: 'qwen', maxSeqLen: 2048, role: 68 },
        { model: 'alpha', role: 80 },
        { model: 'unscheduled', role: 85 },
      ]),
    );
    expect(models.list()).toEqual({
      object: 'list',
      data: [
        { id: 'alpha', object: 'model', created: 1_700_000_000, owned_by: 'pdlink', max_model_len: 2048 },
        { id: 'qwen', object: 'model', created: 1_700_000_000, owned_by: 'pdlink', max_model_len: 2048 },
      ],
    });
    // A model keeps the time it was first seen while it stays; one that left and came back is new.
    now += 60_000;
    registry.apply(snapshot([{ model: 'qwen' }, { model: 'beta', role: 68 }]));
    expect(models.list().data.map((m) => [m.id, m.created])).toEqual([
      ['beta', 1_700_000_060],
      ['qwen', 1_700_000_000],
    ]);
  });

  test('without a registry, an empty list', () => {
    expect(modelList(undefined).list()).toEqual({ object: 'list', data: [] });
  });
});

describe('GET /v1/models on the inference listener', () => {
  let coordinator: Coordinator | undefined;
  afterEach(async () => {
    await coordinator?.close();
    coordinator = undefined;
  });
  const get = (headers: Record<string, string> = {}) =>
    coordinator!.inferenceFetch(new Request('http://127.0.0.1:1025/v1/models', { headers }));

  test("the registry's models in OpenAI's list shape", async () => {
    coordinator = createCoordinator();
    expect(await (await get()).json()).toEqual({ object: 'list', data: [] });
    coordinator.registry.apply(snapshot([{ model: 'm1' }, { model: 'm1', role: 68 }]));
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toStartWith('application/json');
    expect(((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(['m1']);
    expect((await coordinator.inferenceFetch(new Request('http://127.0.0.1:1025/v1/models', { method: 'HEAD' }))).status).toBe(200);
  });

  test('behind the same API keys as the completions routes', async () => {
    coordinator = createCoordinator({ apiKeys: ['key-1'] });
    coordinator.registry.apply(snapshot([{ model: 'm1' }]));
    const refused = await get();
    expect(refused.status).toBe(401);
    expect((await get({ authorization: 'Bearer wrong' })).status).toBe(401);
    const allowed = await get({ authorization: 'Bearer key-1' });
    expect(allowed.status).toBe(200);
    expect(((await allowed.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(['m1']);
  });
});

describe('a prompt no instance can hold', () => {
  let coordinator: Coordinator | undefined;
  afterEach(async () => {
    await coordinator?.close();
    coordinator = undefined;
  });
  const complete = (body: unknown) =>
    coordinator!.inferenceFetch(
      new Request('http://127.0.0.1:1025/v1/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'big' },
        body: JSON.stringify(body),
      }),
    );

  test('is the client’s error (400 naming the prompt), not the cluster being busy (503)', async () => {
    coordinator = createCoordinator();
    // Every instance holds 1024 blocks of 128 tokens: 131072 tokens.
    coordinator.registry.apply(snapshot([{ model: 'm' }, { model: 'm', role: 68 }]));
    const tooLong = await complete({ model: 'm', prompt: Array.from({ length: 131_073 }, () => 7), max_tokens: 1 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.headers.get('x-request-id')).toBe('big');
    const error = ((await tooLong.json()) as { error: { message: string; param: string; type: string } }).error;
    expect(error).toMatchObject({ param: 'prompt', type: 'invalid_request_error' });
    expect(error.message).toBe('the prompt is 131073 tokens; no decode instance can hold more than 131072 (total_block_num × block_size)');
    // Text is counted at its fewest possible tokens: 16 bytes each.
    const text = await complete({ model: 'm', prompt: 'x'.repeat(131_073 * 16), max_tokens: 1 });
    expect(text.status).toBe(400);
    expect(((await text.json()) as { error: { message: string } }).error.message).toStartWith(
      'the prompt is at least 131073 tokens (estimated from its length)',
    );
    // One that fits goes on to placement (nothing answers at these addresses: not a 400).
    expect((await complete({ model: 'm', prompt: Array.from({ length: 131_072 }, () => 7), max_tokens: 1 })).status).not.toBe(400);
    expect(coordinator.ledger.totals().active).toBe(0);
  });
});
