import { afterEach, describe, expect, test } from 'bun:test';
import { KvEventIntake } from '../kv-events/intake.ts';
import type { KvEvent } from '../kv/events.ts';
import { keyHex } from '../kv/block-keys.ts';
import { noBatchCounts } from '../kv/kv-state.ts';
import { conductorRoutes } from './conductor.ts';

const intakes: KvEventIntake[] = [];
afterEach(() => intakes.splice(0).forEach((i) => i.close()));

/** An intake whose publishers are never reached (port 9 is discard): events are applied by hand. */
function setup() {
  const intake = new KvEventIntake();
  intakes.push(intake);
  const app = conductorRoutes(intake);
  const post = (path: string, body: unknown) =>
    app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const register = (instance: string, dp = 0, extra: Record<string, unknown> = {}) =>
    post('/register', {
      endpoint: `tcp://127.0.0.1:9`,
      type: 'vLLM',
      modelname: 'm',
      instance_id: instance,
      block_size: 2,
      dp_rank: dp,
      ...extra,
    });
  const store = (instance: string, dp: number, tokens: number[], medium = 'GPU', tenant = 'default') => {
    const source = intake.state.sourceId(instance, tenant, dp)!;
    const blocks = tokens.length / 2;
    const event: KvEvent = {
      kind: 'stored',
      hashes: Uint32Array.from(Array.from({ length: blocks }, (_, i) => [dp, i + 1]).flat()),
      parent: undefined,
      tokens: Uint32Array.from(tokens),
      blockSize: 2,
      medium,
      loraId: undefined,
      loraName: undefined,
    };
    intake.state.apply(source, { ts: 0, events: [event], dpRank: dp, unknownEvents: 0 }, noBatchCounts());
  };
  return { intake, app, post, register, store };
}

describe('the Conductor API', () => {
  test('register, query by tokens and by hash: per instance, medium and DP rank', async () => {
    const { post, register, store, intake } = setup();
    expect(await (await register('vllm-a', 0)).json()).toEqual({ status: 'registered successfully', instance_id: 'vllm-a' });
    await register('vllm-a', 1);
    await register('vllm-b', 0);
    store('vllm-a', 0, [1, 2, 3, 4]);
    store('vllm-a', 1, [1, 2, 3, 4, 5, 6], 'CPU');
    const res = await post('/query', { model: 'm', token_ids: [1, 2, 3, 4, 5, 6, 7], block_size: 2 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      default: {
        'vllm-a': { longest_matched: 6, GPU: 4, CPU: 6, DP: { '0': 4, '1': 6 } },
        'vllm-b': { longest_matched: 0, GPU: 0, CPU: 0, DP: { '0': 0 } },
      },
    });
    const keys = new Uint32Array(6);
    intake.state.hasher.keys([1, 2, 3, 4, 5, 6], 2, keys);
    const hashes = [0, 1, 2].map((i) => `0x${keyHex(keys, 2 * i)}`);
    const byHash = await post('/query_by_hash', { model: 'm', seq_hashes: hashes, block_size: 2, instance_id: 'vllm-a' });
    expect(await byHash.json()).toEqual({ default: { 'vllm-a': { longest_matched: 6, GPU: 4, CPU: 6, DP: { '0': 4, '1': 6 } } } });
  });

  test('tenants are separate; another model or block size finds nothing', async () => {
    const { post, register, store } = setup();
    await register('x', 0, { tenant_id: 't1' });
    store('x', 0, [1, 2], 'GPU', 't1');
    expect(await (await post('/query', { model: 'm', token_ids: [1, 2], block_size: 2, tenant_id: 't1' })).json()).toEqual({
      t1: { x: { longest_matched: 2, GPU: 2, CPU: 0, DP: { '0': 2 } } },
    });
    expect(await (await post('/query', { model: 'm', token_ids: [1, 2], block_size: 2 })).json()).toEqual({ default: {} });
    expect(await (await post('/query', { model: 'other', token_ids: [1, 2], block_size: 2, tenant_id: 't1' })).json()).toEqual({
      t1: { x: { longest_matched: 0, GPU: 0, CPU: 0, DP: { '0': 0 } } },
    });
  });

  test('unregister drops the publisher and what it held; unknown is 404', async () => {
    const { post, register, store, intake } = setup();
    await register('a', 0);
    store('a', 0, [1, 2]);
    const res = await post('/unregister', { instance_id: 'a', dp_rank: 0 });
    expect(await res.json()).toEqual({ status: 'unregistered successfully', removed_instances: ['a|default|0'] });
    expect(intake.state.index.held).toBe(0);
    expect((await post('/unregister', { instance_id: 'a', dp_rank: 0 })).status).toBe(404);
  });

  test('bad bodies are 422 naming the field, and change nothing', async () => {
    const { post, register, intake } = setup();
    const cases: [string, unknown, string][] = [
      ['/register', { endpoint: 'http://x:1', type: 'vLLM', modelname: 'm', instance_id: 'a', block_size: 2, dp_rank: 0 }, 'endpoint'],
      ['/register', { endpoint: 'tcp://x:1', type: 'TGI', modelname: 'm', instance_id: 'a', block_size: 2, dp_rank: 0 }, 'type'],
      ['/register', { endpoint: 'tcp://x:1', type: 'vLLM', modelname: 'm', instance_id: 'a', block_size: 0, dp_rank: 0 }, 'block_size'],
      ['/query', { model: 'm', token_ids: [1, -2], block_size: 2 }, 'token_ids[1]'],
      ['/query', { model: 'm', token_ids: [1], block_size: 2, lora_id: 3, lora_name: 'x' }, ''],
      ['/query_by_hash', { model: 'm', seq_hashes: ['0x1', 'nope'], block_size: 2 }, 'seq_hashes[1]'],
      ['/query_by_hash', { model: 'm', block_size: 2 }, ''],
    ];
    for (const [path, body, field] of cases) {
      const res = await post(path, body);
      expect([path, res.status]).toEqual([path, 422]);
      const text = await res.text();
      if (field !== '') expect(text).toContain(field);
    }
    expect([...intake.publishers()]).toEqual([]);
    expect((await register('a', 0)).status).toBe(200);
  });

  test('global_view lists every publisher with its stream counters', async () => {
    const { app, register } = setup();
    await register('a', 0, { replay_endpoint: 'tcp://127.0.0.1:10' });
    const view = (await (await app.request('/global_view')).json()) as {
      tenants: Record<string, Record<string, { dp_ranks: Record<string, Record<string, unknown>> }>>;
    };
    expect(view.tenants['default']!['a']!.dp_ranks['0']).toMatchObject({
      endpoint: 'tcp://127.0.0.1:9',
      replay_endpoint: 'tcp://127.0.0.1:10',
      origin: 'conductor',
      gaps: 0,
    });
  });
});
