/**
 * The JSON nesting limit on every JSON endpoint of every listener, as each listener mounts its
 * routes: the Coordinator's management and inference apps, the instance agent's management app
 * (role, links, KV), and the engine simulator's inference and control apps. A body nested deeper
 * than the limit answers 400 naming the limit, and nothing is stored or started.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createCoordinator, type Coordinator } from '../src/apps/coordinator.ts';
import { MAX_JSON_DEPTH } from '../src/core/limits.ts';
import { createInstanceAgent, type InstanceAgent } from '../src/apps/agent.ts';
import { createRegistry } from '../src/core/metrics.ts';
import { SEED_REFRESH_BODY } from './doubles/refresh-examples.ts';
import { simControlApp } from '../src/sim/engine/http/control-app.ts';
import { SimEngine } from '../src/sim/engine/engine.ts';
import { simInferenceApp } from '../src/sim/engine/http/inference-app.ts';
import { MemoryFabric } from '../src/sim/engine/kv/kv-port.ts';

type App = { request(path: string, init?: RequestInit): Response | Promise<Response> };

/** `levels` arrays nested in one another, as JSON text. */
const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
/** What the hostile bodies carry: 100,000 levels, about 200 KB. */
const HOSTILE = nested(100_000);
/** The same for routes whose body limit is 64 KiB (a larger body is a 413 before it is read): 30,000 levels. */
const HOSTILE_SMALL = nested(30_000);

/** A JSON object's text with one more field, `"extra": <value>`, at its end. */
function withExtra(body: unknown, value: string): string {
  const text = typeof body === 'string' ? body.trim() : JSON.stringify(body);
  return `${text.slice(0, -1)},"extra":${value}}`;
}

function post(app: App, path: string, body: string): Promise<Response> {
  return Promise.resolve(app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body }));
}

/** The message of either error shape: pdlink's `{error: string}` or OpenAI's `{error: {message}}`. */
async function errorMessage(res: Response): Promise<string> {
  const body = (await res.json()) as { error: string | { message: string } };
  return typeof body.error === 'string' ? body.error : body.error.message;
}

async function expectTooDeep(res: Response): Promise<void> {
  expect(res.status).toBe(400);
  expect(await errorMessage(res)).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
}

describe('Coordinator', () => {
  let coordinator: Coordinator;
  beforeAll(() => {
    coordinator = createCoordinator({ metrics: createRegistry() });
  });
  afterAll(() => coordinator.close());

  const instances = async () => {
    const res = await coordinator.managementApp.request('/v1/instances');
    expect(res.status).toBe(200);
    return (await res.json()) as { generation: number; instances: Record<string, unknown>[] };
  };
  /** The seed's refresh body with `value` as an unknown field of instance 1 (the body, `instances` and the instance are 3 levels). */
  const refreshWith = (value: string) => SEED_REFRESH_BODY.replace('"model_name"', `"extra": ${value}, "model_name"`);

  test('refresh: 100,000 nested levels → 400 naming the limit; the registry and its view are untouched', async () => {
    expect((await post(coordinator.managementApp, '/v1/instances/refresh', SEED_REFRESH_BODY)).status).toBe(200);
    const before = await instances();
    for (let i = 0; i < 2; i++) await expectTooDeep(await post(coordinator.managementApp, '/v1/instances/refresh', refreshWith(HOSTILE)));
    expect(coordinator.registry.generation).toBe(before.generation);
    expect(await instances()).toEqual(before);
  });

  test(`refresh: a body exactly ${MAX_JSON_DEPTH} levels deep is accepted and listed; one more level is refused`, async () => {
    const generation = coordinator.registry.generation;
    await expectTooDeep(await post(coordinator.managementApp, '/v1/instances/refresh', refreshWith(nested(MAX_JSON_DEPTH - 2))));
    expect(coordinator.registry.generation).toBe(generation);
    const res = await post(coordinator.managementApp, '/v1/instances/refresh', refreshWith(nested(MAX_JSON_DEPTH - 3)));
    expect(res.status).toBe(200);
    const view = await instances();
    expect(view.generation).toBe(generation + 1);
    expect(JSON.stringify(view.instances)).toContain(`"extra":${nested(MAX_JSON_DEPTH - 3)}`);
    // Sent again, the same snapshot compares equal: nothing is updated.
    expect((await post(coordinator.managementApp, '/v1/instances/refresh', refreshWith(nested(MAX_JSON_DEPTH - 3)))).status).toBe(200);
  });

  test('inference: /v1/completions and /v1/chat/completions → 400 in the OpenAI error shape', async () => {
    for (const [path, body] of [
      ['/v1/completions', { model: 'm', prompt: 'hi' }],
      ['/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }],
    ] as const) {
      const res = await post(coordinator.inferenceApp, path, withExtra(body, HOSTILE));
      expect(res.status).toBe(400);
      const answer = (await res.json()) as { error: { message: string; type: string } };
      expect(answer.error.type).toBe('invalid_request_error');
      expect(answer.error.message).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
    }
    expect(coordinator.ledger.totals().active).toBe(0);
  });
});

describe('instance agent', () => {
  let agent: InstanceAgent;
  beforeAll(async () => {
    for (let attempt = 0; ; attempt++) {
      const port = 20000 + Math.floor(Math.random() * 30000);
      try {
        agent = await createInstanceAgent({
          devices: [{ endpoint: '0', ip: '127.0.0.7', port, clusterId: 7n }],
          threads: 1,
          metrics: createRegistry(),
          transfers: { threads: 1 },
        });
        break;
      } catch (err) {
        if (attempt > 5 || !/cannot open link endpoint/.test(String(err))) throw err;
      }
    }
  });
  afterAll(() => agent?.close());

  const get = async (path: string) => (await agent.managementApp.request(path)).json();

  test('role posts → 400 naming the limit, nothing queued', async () => {
    const role = {
      local: { server_ip: '127.0.0.7', device: [{ device_ip: '127.0.0.7', device_logical_id: '0' }] },
      peers: [{ server_ip: '127.0.0.8', device: [{ device_ip: '127.0.0.8', device_logical_id: '0' }] }],
    };
    const status = await get('/v1/status');
    for (const which of ['prefill', 'decode'])
      await expectTooDeep(await post(agent.managementApp, `/v1/role/${which}`, withExtra(role, HOSTILE)));
    // Deep inside a field the schema reads, too.
    const inField = JSON.stringify(role).replace('"127.0.0.8"', HOSTILE);
    await expectTooDeep(await post(agent.managementApp, '/v1/role/decode', inField));
    await agent.role.settled();
    expect(await get('/v1/status')).toEqual(status);
  });

  test('link and unlink → 400 naming the limit, no link made', async () => {
    const clusters = [{ remote_cluster_id: 8, remote_ip_info: '127.0.0.8:26000' }];
    await expectTooDeep(await post(agent.managementApp, '/v1/links/link', withExtra({ clusters, timeout: 100 }, HOSTILE)));
    await expectTooDeep(await post(agent.managementApp, '/v1/links/unlink', withExtra({ clusters, force: true }, HOSTILE)));
    expect(await get('/v1/links')).toEqual({ links: [] });
  });

  test('every /v1/kv call → 400 naming the limit, no cache registered, no transfer started', async () => {
    const bodies: [string, unknown][] = [
      ['/v1/kv/caches', { cache_id: 70, num_blocks: 4, block_bytes: 8 }],
      ['/v1/kv/write', { cache_id: 70, blocks: [0], data: 'AAAAAAAAAAA=' }],
      ['/v1/kv/read', { cache_id: 70, blocks: [0] }],
      ['/v1/kv/pull', { remote_cluster_id: 8, remote_cache_id: 1, src_blocks: [0], dst_cache_id: 70, dst_blocks: [0] }],
      ['/v1/kv/push', { remote_cluster_id: 8, remote_cache_id: 1, src_blocks: [0], dst_cache_id: 70, dst_blocks: [0] }],
    ];
    for (const [path, body] of bodies) await expectTooDeep(await post(agent.managementApp, path, withExtra(body, HOSTILE_SMALL)));
    expect(await get('/v1/kv/caches')).toEqual({ caches: [] });
    expect(await get('/v1/kv/transfers')).toEqual({ transfers: [] });
  });
});

describe('engine simulator', () => {
  const devices = [{ endpoint: '0', clusterId: 9n }];
  const engine = new SimEngine({
    role: 'prefill',
    model: 'sim',
    devices,
    kv: new MemoryFabric().kv(devices),
    numBlocks: 16,
    blockBytes: 64,
    blockTokens: 4,
    prefillMsPerToken: 0,
    decodeMsPerToken: 0,
    maxModelLen: 512,
    kvLeaseMs: 60_000,
    pullTimeoutMs: 1000,
  });
  const inference = simInferenceApp(engine);
  const control = simControlApp(engine);

  test('inference: /v1/completions and /v1/chat/completions → 400 naming the limit, no request served', async () => {
    await expectTooDeep(await post(inference, '/v1/completions', withExtra({ model: 'sim', prompt: 'hi', max_tokens: 1 }, HOSTILE)));
    const chat = { model: 'sim', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 };
    await expectTooDeep(await post(inference, '/v1/chat/completions', withExtra(chat, HOSTILE)));
    expect(engine.log.list()).toEqual([]);
  });

  test('control: /sim/faults and /sim/kv/release → 400 naming the limit, no fault armed', async () => {
    const faults = await (await control.request('/sim/faults')).json();
    await expectTooDeep(await post(control, '/sim/faults', withExtra({}, HOSTILE_SMALL).replace('{,', '{')));
    await expectTooDeep(await post(control, '/sim/kv/release', withExtra({ remote_request_id: 'r' }, HOSTILE_SMALL)));
    expect(await (await control.request('/sim/faults')).json()).toEqual(faults);
  });
});
