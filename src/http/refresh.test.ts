import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { Hono } from 'hono';
import { ClusterRegistry } from '../cluster/registry.ts';
import { OptionError } from '../core/errors.ts';
import { createRegistry, type Registry } from '../core/metrics.ts';
import { parsesIn } from '../../test/doubles/json-parse-count.ts';
import { exampleSnapshot, type ExampleBody, SEED_REFRESH_BODY, seedExample } from '../../test/doubles/refresh-examples.ts';
import { MAX_INSTANCES, parseRefresh } from '../schema/refresh.ts';
import { InstanceAddressPolicy } from '../net/address-policy.ts';
import { refreshEndpoint, refreshRoutes } from './refresh.ts';

const JSON_HEADERS = { 'content-type': 'application/json' };

function setup(bodyLimitBytes = 64 * 1024) {
  const registry = new ClusterRegistry();
  const metrics = createRegistry();
  const app = refreshRoutes({ registry, bodyLimitBytes, metrics });
  return { app, registry, metrics };
}

function refresh(app: Hono, body: unknown, headers: Record<string, string> = JSON_HEADERS): Promise<Response> {
  return Promise.resolve(
    app.request('/v1/instances/refresh', { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) }),
  );
}

function seedWith(edit: (body: ExampleBody) => void): ExampleBody {
  const body = seedExample();
  edit(body);
  return body;
}

interface ErrorEnvelope {
  error: string;
  error_type: string;
  issues?: { path: string; message: string }[];
}

async function expectRejected(res: Response, status: number, errorType: string): Promise<ErrorEnvelope> {
  expect(res.status).toBe(status);
  const body = (await res.json()) as ErrorEnvelope;
  expect(body.error_type).toBe(errorType);
  expect(typeof body.error).toBe('string');
  return body;
}

/** The issue paths of a 400 invalid-body answer. */
async function rejectedPaths(res: Response): Promise<string[]> {
  const body = await expectRejected(res, 400, 'InvalidRequestBody');
  return body.issues!.map((i) => i.path);
}

async function metricValue(metrics: Registry, line: string): Promise<number | undefined> {
  const text = await metrics.metrics();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('POST /v1/instances/refresh', () => {
  test("the source document's own example is accepted: 200 with an empty body", async () => {
    const { app, registry } = setup();
    const res = await refresh(app, SEED_REFRESH_BODY);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    expect(res.headers.get('content-type')).toBeNull();
    expect(registry.all().map((i) => [i.id, i.role])).toEqual([
      [0, 'prefill'],
      [1, 'decode'],
    ]);
  });

  test.each([
    ['1023', 400],
    ['1024', 200],
    ['65535', 200],
    ['65536', 400],
  ])('port %p → %p', async (port, status) => {
    const { app } = setup();
    const res = await refresh(
      app,
      seedWith((b) => (b.instances[0]!.port = port)),
    );
    expect(res.status).toBe(status);
    if (status === 400) expect(await rejectedPaths(res)).toEqual(['instances[0].port']);
  });

  test('max_output_len = max_seq_len - 1 is accepted, = max_seq_len is rejected', async () => {
    const { app } = setup();
    expect(
      (
        await refresh(
          app,
          seedWith((b) => (b.instances[1]!.static_info.max_output_len = 2047)),
        )
      ).status,
    ).toBe(200);
    const res = await refresh(
      app,
      seedWith((b) => (b.instances[1]!.static_info.max_output_len = 2048)),
    );
    expect(await rejectedPaths(res)).toEqual(['instances[1].static_info.max_output_len']);
  });

  test.each([
    [0, 400],
    [1, 200],
    [5000, 200],
    [5001, 400],
  ])('total_slots_num %p → %p', async (slots, status) => {
    const { app } = setup();
    const body = seedWith((b) => {
      b.instances[0]!.static_info.total_slots_num = slots;
      b.instances[0]!.dynamic_info.avail_slots_num = Math.min(slots, 1);
    });
    const res = await refresh(app, body);
    expect(res.status).toBe(status);
    if (status === 400) expect(await rejectedPaths(res)).toEqual(['instances[0].static_info.total_slots_num']);
  });

  test.each([
    [0, 400],
    [1, 200],
    [128, 200],
    [129, 400],
  ])('block_size %p → %p', async (size, status) => {
    const { app } = setup();
    const res = await refresh(
      app,
      seedWith((b) => (b.instances[0]!.static_info.block_size = size)),
    );
    expect(res.status).toBe(status);
    if (status === 400) expect(await rejectedPaths(res)).toEqual(['instances[0].static_info.block_size']);
  });

  test('avail above total is rejected for slots and blocks', async () => {
    const { app } = setup();
    const body = seedWith((b) => {
      b.instances[0]!.dynamic_info.avail_slots_num = 201;
      b.instances[1]!.dynamic_info.avail_block_num = 1025;
    });
    expect(await rejectedPaths(await refresh(app, body))).toEqual([
      'instances[0].dynamic_info.avail_slots_num',
      'instances[1].dynamic_info.avail_block_num',
    ]);
  });

  test('label and role outside their values are rejected', async () => {
    const { app } = setup();
    const body = seedWith((b) => {
      b.instances[0]!.static_info.label = 4;
      b.instances[1]!.static_info.role = 81;
    });
    expect(await rejectedPaths(await refresh(app, body))).toEqual(['instances[0].static_info.label', 'instances[1].static_info.role']);
  });

  test('a decode instance without peers is rejected', async () => {
    const { app } = setup();
    const res = await refresh(
      app,
      seedWith((b) => delete b.instances[1]!.dynamic_info.peers),
    );
    expect(await rejectedPaths(res)).toEqual(['instances[1].dynamic_info.peers']);
  });

  test('peers naming an unknown or a non-prefill instance are rejected', async () => {
    const { app } = setup();
    const res = await refresh(
      app,
      seedWith((b) => (b.instances[1]!.dynamic_info.peers = [9, 1])),
    );
    const body = await expectRejected(res, 400, 'InvalidRequestBody');
    expect(body.issues).toEqual([
      { path: 'instances[1].dynamic_info.peers[0]', message: 'peer 9 is not an instance of this snapshot' },
      {
        path: 'instances[1].dynamic_info.peers[1]',
        message: 'peer 1 has role 68 (decode); the peers of a decode instance must be prefill instances (role 80)',
      },
    ]);
  });

  test('ids and instances that disagree, and duplicates, are rejected', async () => {
    const { app } = setup();
    expect(
      await rejectedPaths(
        await refresh(
          app,
          seedWith((b) => (b.ids = [0])),
        ),
      ),
    ).toEqual(['instances[1].id']);
    expect(
      await rejectedPaths(
        await refresh(
          app,
          seedWith((b) => (b.ids = [0, 1, 2])),
        ),
      ),
    ).toEqual(['ids[2]']);
    expect(
      await rejectedPaths(
        await refresh(
          app,
          seedWith((b) => (b.ids = [0, 1, 1])),
        ),
      ),
    ).toEqual(['ids[2]']);
    const twice = seedWith((b) => b.instances.push(structuredClone(b.instances[0]!)));
    expect(await rejectedPaths(await refresh(app, twice))).toEqual(['instances[2].id']);
  });

  test(`${MAX_INSTANCES} instances are accepted, ${MAX_INSTANCES + 1} rejected`, async () => {
    const { app, registry } = setup(8 * 1024 * 1024);
    expect((await refresh(app, exampleSnapshot(MAX_INSTANCES))).status).toBe(200);
    expect(registry.all()).toHaveLength(MAX_INSTANCES);
    const res = await refresh(app, exampleSnapshot(MAX_INSTANCES + 1));
    expect(await rejectedPaths(res)).toEqual(['ids', 'instances']);
    expect(registry.all()).toHaveLength(MAX_INSTANCES);
  });

  test('an id beyond 2^53-1 is rejected by path, never rounded', async () => {
    const { app, registry } = setup();
    const text = JSON.stringify(seedExample())
      .replace('"ids":[0,1]', '"ids":[9007199254740993,1]')
      .replace('"id":0', '"id":9007199254740993');
    const body = await expectRejected(await refresh(app, text), 400, 'InvalidRequestBody');
    const unsafe = body.issues!.filter((i) => i.message === 'integer exceeds 2^53-1 and cannot be represented exactly');
    expect(unsafe.map((i) => i.path)).toEqual(['ids[0]', 'instances[0].id']);
    expect(registry.get(9007199254740992)).toBeUndefined();
  });

  test('malformed JSON, a wrong content type and an empty body are 400s', async () => {
    const { app } = setup();
    await expectRejected(await refresh(app, '{"ids": ['), 400, 'BadRequest');
    await expectRejected(await refresh(app, SEED_REFRESH_BODY, { 'content-type': 'text/plain' }), 400, 'UnsupportedMediaType');
    await expectRejected(await refresh(app, SEED_REFRESH_BODY, {}), 400, 'UnsupportedMediaType');
    await expectRejected(await refresh(app, ''), 400, 'BadRequest');
  });

  test('a body over the limit is a 413, declared or streamed', async () => {
    const { app, registry } = setup(1024);
    expect(SEED_REFRESH_BODY.length).toBeGreaterThan(1024);
    await expectRejected(await refresh(app, SEED_REFRESH_BODY), 413, 'PayloadTooLarge');
    const declared = await refresh(app, SEED_REFRESH_BODY, { ...JSON_HEADERS, 'content-length': String(SEED_REFRESH_BODY.length) });
    await expectRejected(declared, 413, 'PayloadTooLarge');
    const bytes = new TextEncoder().encode(SEED_REFRESH_BODY);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 100) controller.enqueue(bytes.slice(i, i + 100));
        controller.close();
      },
    });
    const streamed = await app.request('/v1/instances/refresh', {
      method: 'POST',
      headers: JSON_HEADERS,
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await expectRejected(streamed, 413, 'PayloadTooLarge');
    expect(registry.generation).toBe(0);
  });

  test('several problems are all listed in one answer, in the envelope', async () => {
    const { app } = setup();
    const body = seedWith((b) => {
      b.instances[0]!.port = '65536';
      b.instances[0]!.ip = 'not-an-ip';
      b.instances[1]!.static_info.block_size = 0;
      b.instances[1]!.dynamic_info.peers = [0, 0];
    });
    const answer = await expectRejected(await refresh(app, body), 400, 'InvalidRequestBody');
    expect(Object.keys(answer).sort()).toEqual(['error', 'error_type', 'issues']);
    expect(answer.issues!.map((i) => i.path)).toEqual([
      'instances[0].ip',
      'instances[0].port',
      'instances[1].static_info.block_size',
      'instances[1].dynamic_info.peers[1]',
    ]);
    expect(answer.error).toContain('instances[0].port');
  });

  test('a rejected refresh changes nothing', async () => {
    const { app, registry } = setup();
    expect((await refresh(app, seedExample())).status).toBe(200);
    const before = await (await app.request('/v1/instances')).text();
    const bad = seedWith((b) => {
      b.ids = [0, 1, 2];
      b.instances.push({ ...structuredClone(b.instances[0]!), id: 2 });
      b.instances[0]!.static_info.block_size = 256;
    });
    expect((await refresh(app, bad)).status).toBe(400);
    expect(await (await app.request('/v1/instances')).text()).toBe(before);
    expect(registry.generation).toBe(1);
  });

  test('an entry whose KV-event endpoint cannot be used is refused naming the field, and nothing changes', async () => {
    const { app, registry } = setup();
    const good = seedWith((b) => (b.instances[0]!.kv_events_endpoint = 'tcp://10.0.0.5:5557'));
    expect((await refresh(app, good)).status).toBe(200);
    const before = await (await app.request('/v1/instances')).text();
    const bad = seedWith((b) => {
      b.instances[0]!.kv_events_endpoint = 'tcp://10.0.0.5';
      b.instances[1]!.kv_events_endpoint = 'tcp://10.0.0.6:5557';
    });
    const body = await expectRejected(await refresh(app, bad), 400, 'InvalidRequestBody');
    expect(body.issues).toEqual([{ path: 'instances[0].kv_events_endpoint', message: expect.stringContaining('must be tcp://HOST:PORT') }]);
    expect(await (await app.request('/v1/instances')).text()).toBe(before);
    expect(registry.generation).toBe(1);
  });

  test('errors keep the envelope when the routes are mounted under a prefix', async () => {
    const { app } = setup();
    const parent = new Hono();
    parent.route('/pd', app);
    const res = await parent.request('/pd/v1/instances/refresh', { method: 'POST', headers: JSON_HEADERS, body: '[' });
    await expectRejected(res, 400, 'BadRequest');
    expect(
      (await parent.request('/pd/v1/instances/refresh', { method: 'POST', headers: JSON_HEADERS, body: SEED_REFRESH_BODY })).status,
    ).toBe(200);
  });
});

describe('errors past validation', () => {
  test('an error thrown while applying is answered with the envelope, standalone as mounted', async () => {
    class Failing extends ClusterRegistry {
      override apply(): never {
        throw new Error('a fault of the registry');
      }
    }
    const failing = new Failing();
    const metrics = createRegistry();
    const standalone = refreshRoutes({ registry: failing, bodyLimitBytes: 64 * 1024, metrics });
    const mounted = new Hono().route('/', refreshRoutes({ registry: failing, bodyLimitBytes: 64 * 1024, metrics: createRegistry() }));
    const errorLog = console.error;
    console.error = () => {};
    try {
      for (const app of [standalone, mounted]) {
        const res = await refresh(app, SEED_REFRESH_BODY);
        expect(res.status).toBe(500);
        expect(await res.json()).toEqual({ error: 'internal error', error_type: 'InternalError' });
      }
    } finally {
      console.error = errorLog;
    }
    // Not a refused body: counted neither as accepted nor as invalid.
    expect(await metricValue(metrics, 'pdlink_refresh_total{outcome="ok"}')).toBe(0);
    expect(await metricValue(metrics, 'pdlink_refresh_total{outcome="invalid"}')).toBe(0);
  });
});

describe('options', () => {
  test.each([0, -1, 1.5, Number.NaN])('bodyLimitBytes %p is refused when the routes are built', (limit) => {
    const build = () => refreshRoutes({ registry: new ClusterRegistry(), bodyLimitBytes: limit, metrics: createRegistry() });
    expect(build).toThrow(new OptionError('bodyLimitBytes must be a positive integer'));
    expect(build).toThrow(OptionError);
  });
});

describe('GET /v1/instances', () => {
  test('before any refresh: an empty view', async () => {
    const { app } = setup();
    const res = await app.request('/v1/instances');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toStartWith('application/json');
    expect(await res.json()).toEqual({
      generation: 0,
      refreshed_at: null,
      counts: { prefill: 0, decode: 0, undefined: 0 },
      instances: [],
      groups: [],
      peers: [],
    });
  });

  test('shows the accepted instances with their unknown fields, exact integers included', async () => {
    const { app } = setup();
    const text = JSON.stringify(
      seedWith((b) => {
        b.instances[0]!.virtual_id = 7;
        b.instances[0]!.prefix_hash = 1234;
        b.instances[1]!.static_info.p_percentage = 40;
      }),
    ).replace('"prefix_hash":1234', '"prefix_hash":18446744073709551615');
    expect((await refresh(app, text)).status).toBe(200);
    const res = await app.request('/v1/instances');
    const raw = await res.text();
    expect(raw).toContain('"prefix_hash":18446744073709551615');
    const view = JSON.parse(raw) as { generation: number; instances: Record<string, any>[]; groups: unknown[]; peers: unknown[] };
    expect(view.generation).toBe(1);
    expect(view.instances[0]!.virtual_id).toBe(7);
    expect(view.instances[1]!.static_info.p_percentage).toBe(40);
    expect(view.instances[1]!.dynamic_info).toEqual({ avail_slots_num: 200, avail_block_num: 1024, peers: [0] });
    expect(view.groups).toEqual([{ group_id: 0, prefill: [0], decode: [1], undefined: [] }]);
    expect(view.peers).toEqual([
      { id: 0, role: 'prefill', peers: [] },
      { id: 1, role: 'decode', peers: [0] },
    ]);
  });
});

describe('metrics', () => {
  test('outcomes, apply time and instances per role', async () => {
    const { app, metrics } = setup(4096);
    expect(await metricValue(metrics, 'pdlink_refresh_total{outcome="ok"}')).toBe(0);
    expect(await metricValue(metrics, 'pdlink_instances{role="prefill"}')).toBe(0);
    await refresh(app, seedExample());
    await refresh(
      app,
      seedWith((b) => (b.instances[0]!.port = '1')),
    );
    await refresh(app, '{');
    await refresh(app, 'x'.repeat(5000));
    expect(await metricValue(metrics, 'pdlink_refresh_total{outcome="ok"}')).toBe(1);
    expect(await metricValue(metrics, 'pdlink_refresh_total{outcome="invalid"}')).toBe(2);
    expect(await metricValue(metrics, 'pdlink_refresh_total{outcome="too_large"}')).toBe(1);
    expect(await metricValue(metrics, 'pdlink_refresh_apply_seconds_count')).toBe(1);
    expect(await metricValue(metrics, 'pdlink_instances{role="prefill"}')).toBe(1);
    expect(await metricValue(metrics, 'pdlink_instances{role="decode"}')).toBe(1);
    expect(await metricValue(metrics, 'pdlink_instances{role="undefined"}')).toBe(0);
  });

  test('two route sets on one metrics registry are refused rather than silently sharing series', () => {
    const metrics = createRegistry();
    refreshRoutes({ registry: new ClusterRegistry(), bodyLimitBytes: 1024, metrics });
    expect(() => refreshRoutes({ registry: new ClusterRegistry(), bodyLimitBytes: 1024, metrics })).toThrow(/already been registered/);
  });
});

describe('a body resent unchanged', () => {
  test('is applied again without parsing it again; another body in between is parsed', async () => {
    const { app, registry, metrics } = setup();
    const text = JSON.stringify(exampleSnapshot(8));
    expect(await parsesIn(async () => expect((await refresh(app, text)).status).toBe(200))).toBe(1);
    const refreshes: number[] = [];
    registry.onRefresh((generation) => refreshes.push(generation));
    expect(await parsesIn(async () => expect((await refresh(app, text)).status).toBe(200))).toBe(0);
    expect(refreshes).toEqual([2]);
    expect(registry.all().length).toBe(8);
    const other = JSON.stringify(exampleSnapshot(8, { load: 1 }));
    expect(await parsesIn(async () => expect((await refresh(app, other)).status).toBe(200))).toBe(1);
    expect(registry.get(0)!.availSlots).toBe(199);
    // The first text again is not the last accepted one, but differs from it only in loads: read
    // by the template of the last one, not parsed, and applied as a change.
    expect(await parsesIn(async () => expect((await refresh(app, text)).status).toBe(200))).toBe(0);
    expect(registry.get(0)!.availSlots).toBe(200);
    expect(await metricValue(metrics, 'pdlink_refresh_total{outcome="ok"}')).toBe(4);
  });

  test('still has its addresses checked: a listener learnt of since refuses it, and nothing changes', async () => {
    const registry = new ClusterRegistry();
    const policy = new InstanceAddressPolicy(undefined);
    const app = refreshRoutes({ registry, bodyLimitBytes: 64 * 1024, metrics: createRegistry(), addressPolicy: policy });
    const text = JSON.stringify(exampleSnapshot(4));
    expect((await refresh(app, text)).status).toBe(200);
    policy.addOwn([{ ip: '10.0.0.2', port: 1025 }]);
    expect(await rejectedPaths(await refresh(app, text))).toEqual(['instances[2].ip']);
    expect(registry.generation).toBe(1);
  });

  test('is parsed again when something else applied a snapshot since', async () => {
    const { app, registry } = setup();
    const text = JSON.stringify(exampleSnapshot(4));
    expect((await refresh(app, text)).status).toBe(200);
    registry.apply(parseRefresh(exampleSnapshot(2)));
    expect(await parsesIn(async () => expect((await refresh(app, text)).status).toBe(200))).toBe(1);
    expect(registry.all().length).toBe(4);
    // Applied by this route now: the next resend is not parsed.
    expect(await parsesIn(async () => expect((await refresh(app, text)).status).toBe(200))).toBe(0);
    expect(registry.generation).toBe(4);
  });

  test('addresses the registry holds are not asked about again while policy and registry are unchanged', async () => {
    const registry = new ClusterRegistry();
    const asked: string[] = [];
    class Counting extends InstanceAddressPolicy {
      override refusal(ip: string, port?: number | string): string | undefined {
        asked.push(ip);
        return super.refusal(ip, port);
      }
    }
    const policy = new Counting(undefined);
    const app = refreshRoutes({ registry, bodyLimitBytes: 64 * 1024, metrics: createRegistry(), addressPolicy: policy });
    expect((await refresh(app, JSON.stringify(exampleSnapshot(4)))).status).toBe(200);
    expect(asked.length).toBe(4);
    asked.length = 0;
    const moved = exampleSnapshot(4, { load: 1 });
    moved.instances[1]!.ip = '10.0.1.1';
    expect((await refresh(app, JSON.stringify(moved))).status).toBe(200);
    expect(asked).toEqual(['10.0.1.1']);
    // A registry changed by someone else has its instances asked about again.
    registry.apply(parseRefresh(exampleSnapshot(2)));
    asked.length = 0;
    expect((await refresh(app, JSON.stringify(exampleSnapshot(2, { load: 3 })))).status).toBe(200);
    expect(asked.length).toBe(2);
    asked.length = 0;
    expect((await refresh(app, JSON.stringify(exampleSnapshot(2, { load: 4 })))).status).toBe(200);
    expect(asked).toEqual([]);
    // So does a policy that learnt of a listener since, refusing the instance on it.
    policy.addOwn([{ ip: '10.0.0.1', port: 1025 }]);
    expect(await rejectedPaths(await refresh(app, JSON.stringify(exampleSnapshot(2, { load: 5 }))))).toEqual(['instances[1].ip']);
    expect(asked.length).toBe(2);
    expect(registry.get(0)!.availSlots).toBe(196);
  });

  test('a refused body is checked again each time it comes', async () => {
    const { app, registry } = setup();
    const text = JSON.stringify(seedWith((b) => (b.instances[0]!.port = '80')));
    for (let i = 0; i < 2; i++) expect(await rejectedPaths(await refresh(app, text))).toEqual(['instances[0].port']);
    expect(registry.generation).toBe(0);
  });
});

describe('a body that moved only loads', () => {
  /** Sends `text`, expecting 200, and says how many parses it took. */
  const accepted = async (app: Hono, text: string) => parsesIn(async () => expect((await refresh(app, text)).status).toBe(200));
  const view = async (app: Hono) => (await (await app.request('/v1/instances')).json()) as { instances: unknown[]; generation: number };

  test('after one apply that moved only loads, the next are read without a parse; each gives what a parse would', async () => {
    const { app, registry, metrics } = setup();
    const parsed = setup();
    const heard: [number, number, boolean][] = [];
    registry.onChange((d) => heard.push([d.added.length, d.updated.length, d.updated.every((u) => u.before === u.after)]));
    const bodies = [0, 1, 2, 3].map((load) => exampleSnapshot(8, { load }));
    bodies[3]!.instances[5]!.dynamic_info.avail_block_num = 0;
    // The first adds, the second moves loads (and makes the template): both parsed.
    const costs: number[] = [];
    for (const body of bodies) {
      costs.push(await accepted(app, pretty(body)));
      // The same bodies through a route whose template never matches (a new line each time).
      expect((await refresh(parsed.app, `${pretty(body)}${'\n'.repeat(costs.length)}`)).status).toBe(200);
      const { generation: _mine, ...mine } = { ...(await view(app)), refreshed_at: 0 };
      const { generation: _theirs, ...theirs } = { ...(await view(parsed.app)), refreshed_at: 0 };
      expect(mine).toEqual(theirs);
    }
    expect(costs).toEqual([1, 1, 0, 0]);
    expect(registry.get(5)!.availBlocks).toBe(0);
    expect((await view(app)).instances).toEqual(JSON.parse(JSON.stringify(bodies[3]!.instances)));
    // All added, then every instance's free slots moved each time: all updated, in place.
    expect(heard).toEqual([
      [8, 0, true],
      [0, 8, true],
      [0, 8, true],
      [0, 8, true],
    ]);
    expect(await metricValue(metrics, 'pdlink_refresh_total{outcome="ok"}')).toBe(4);
  });

  test('pdlink_refresh_read_total counts each accepted body by how it was read; a refused one is not counted', async () => {
    const { app, metrics } = setup();
    const read = async () =>
      Object.fromEntries(
        await Promise.all(
          (['parsed', 'resent', 'loads'] as const).map(async (how) => [
            how,
            await metricValue(metrics, `pdlink_refresh_read_total{read="${how}"}`),
          ]),
        ),
      );
    expect(await read()).toEqual({ parsed: 0, resent: 0, loads: 0 });
    const texts = [0, 1, 2].map((load) => JSON.stringify(exampleSnapshot(4, { load })));
    for (const text of [texts[0]!, texts[1]!, texts[1]!, texts[2]!, texts[0]!]) await accepted(app, text);
    expect((await refresh(app, texts[1]!.replace('"avail_slots_num":199', '"avail_slots_num":201'))).status).toBe(400);
    expect(await read()).toEqual({ parsed: 2, resent: 1, loads: 2 });
  });

  test('a load beyond its total, or written otherwise, goes the whole way: refused naming the field, or applied as parsed', async () => {
    const { app, registry } = setup();
    const text = JSON.stringify(exampleSnapshot(4));
    await accepted(app, text);
    expect(await accepted(app, JSON.stringify(exampleSnapshot(4, { load: 1 })))).toBe(1);
    const beyond = text.replace('"avail_slots_num":200', '"avail_slots_num":201');
    expect(await rejectedPaths(await refresh(app, beyond))).toEqual(['instances[0].dynamic_info.avail_slots_num']);
    const zeroLed = text.replace('"avail_slots_num":200', '"avail_slots_num":0200');
    expect((await refresh(app, zeroLed)).status).toBe(400);
    expect(registry.generation).toBe(2);
    expect(registry.get(0)!.availSlots).toBe(199);
    // Written as 150.0: the parse says 150, the registry takes it; the template stays (loads moved only).
    expect(await accepted(app, text.replace('"avail_slots_num":200', '"avail_slots_num":150.0'))).toBe(1);
    expect(registry.get(0)!.availSlots).toBe(150);
    expect(await accepted(app, text)).toBe(0);
    expect(registry.get(0)!.availSlots).toBe(200);
  });

  test('a change beyond loads is parsed and drops the template; a new one is made at the next apply of loads alone', async () => {
    const { app, registry } = setup();
    const body = exampleSnapshot(4);
    await accepted(app, JSON.stringify(body));
    expect(await accepted(app, JSON.stringify(exampleSnapshot(4, { load: 1 })))).toBe(1);
    body.instances[2]!.model_name = 'renamed';
    expect(await accepted(app, JSON.stringify(body))).toBe(1);
    expect(registry.get(2)!.modelName).toBe('renamed');
    const next = structuredClone(body);
    next.instances[0]!.dynamic_info.avail_slots_num = 3;
    expect(await accepted(app, JSON.stringify(next))).toBe(1);
    next.instances[0]!.dynamic_info.avail_slots_num = 4;
    expect(await accepted(app, JSON.stringify(next))).toBe(0);
    expect(registry.get(0)!.availSlots).toBe(4);
    // An instance fewer: parsed, applied, and the template is gone with the topology it described.
    const fewer = structuredClone(next);
    fewer.instances.pop();
    fewer.ids.pop();
    for (const instance of fewer.instances) instance.dynamic_info.peers = instance.dynamic_info.peers.filter((p: number) => p !== 3);
    expect(await accepted(app, JSON.stringify(fewer))).toBe(1);
    fewer.instances[0]!.dynamic_info.avail_slots_num = 5;
    expect(await accepted(app, JSON.stringify(fewer))).toBe(1);
    expect(registry.all().map((i) => i.id)).toEqual([0, 1, 2]);
    expect(registry.get(0)!.availSlots).toBe(5);
  });

  test('texts in a new layout make the template anew from the second that misses it; two layouts in turn do not', async () => {
    const { app, registry } = setup();
    await accepted(app, JSON.stringify(exampleSnapshot(4)));
    expect(await accepted(app, JSON.stringify(exampleSnapshot(4, { load: 1 })))).toBe(1);
    const costs: number[] = [];
    for (let load = 2; load < 6; load++) costs.push(await accepted(app, pretty(exampleSnapshot(4, { load }))));
    expect(costs).toEqual([1, 1, 0, 0]);
    expect(await accepted(app, JSON.stringify(exampleSnapshot(4, { load: 6 })))).toBe(1);
    // Compact and indented in turn: the indented template stays, and every indented text is read by it.
    costs.length = 0;
    for (let load = 7; load < 13; load++) {
      const body = exampleSnapshot(4, { load });
      costs.push(await accepted(app, load % 2 === 0 ? JSON.stringify(body) : pretty(body)));
    }
    expect(costs).toEqual([0, 1, 0, 1, 0, 1]);
    expect(registry.get(0)!.availSlots).toBe(188);
  });

  test('is parsed when something else applied a snapshot since, and when the text holds an escape', async () => {
    const { app, registry } = setup();
    await accepted(app, JSON.stringify(exampleSnapshot(4)));
    expect(await accepted(app, JSON.stringify(exampleSnapshot(4, { load: 1 })))).toBe(1);
    registry.apply(parseRefresh(exampleSnapshot(4, { load: 7 })));
    expect(await accepted(app, JSON.stringify(exampleSnapshot(4, { load: 2 })))).toBe(1);
    expect(registry.get(0)!.availSlots).toBe(198);

    const escaped = setup();
    const body = exampleSnapshot(2);
    body.instances[0]!.model_name = 'a"b';
    for (let load = 0; load < 3; load++) {
      for (const instance of body.instances) instance.dynamic_info.avail_slots_num = 100 + load;
      expect(await accepted(escaped.app, JSON.stringify(body))).toBe(1);
    }
    expect(escaped.registry.get(1)!.availSlots).toBe(102);
  });

  test('read before another refresh changed the topology, and answered after it: parsed, and applied whole', async () => {
    const registry = new ClusterRegistry();
    const { refresh: handle } = refreshEndpoint({ registry, bodyLimitBytes: 64 * 1024, metrics: createRegistry() });
    /** A request whose body arrives when the test says. */
    const held = (text: string) => {
      let arrive!: () => void;
      const body = new Promise<string>((resolve) => (arrive = () => resolve(text)));
      const headers = new Headers({ 'content-type': 'application/json', 'content-length': String(text.length) });
      const request = { headers, signal: new AbortController().signal, text: () => body } as unknown as Request;
      return { request, arrive };
    };
    const send = (text: string) => {
      const { request, arrive } = held(text);
      arrive();
      return handle(request);
    };
    expect((await send(JSON.stringify(exampleSnapshot(4)))).status).toBe(200);
    expect((await send(JSON.stringify(exampleSnapshot(4, { load: 1 })))).status).toBe(200);
    const loads = held(JSON.stringify(exampleSnapshot(4, { load: 2 })));
    const fewer = held(JSON.stringify(exampleSnapshot(3)));
    const answers = [handle(loads.request), handle(fewer.request)];
    // Both are read (loads by the template) before either is answered; the three instances are applied first.
    const parses = await parsesIn(async () => {
      fewer.arrive();
      loads.arrive();
      expect((await Promise.all(answers)).map((r) => r.status)).toEqual([200, 200]);
    });
    // The three-instance body, then the loads body once the template it was read by was gone.
    expect(parses).toBe(2);
    expect(registry.all().map((i) => [i.id, i.availSlots])).toEqual([
      [0, 198],
      [1, 198],
      [2, 198],
      [3, 198],
    ]);
  });

  test('still has its addresses checked against a policy that changed since', async () => {
    const registry = new ClusterRegistry();
    const policy = new InstanceAddressPolicy(undefined);
    const app = refreshRoutes({ registry, bodyLimitBytes: 64 * 1024, metrics: createRegistry(), addressPolicy: policy });
    await accepted(app, JSON.stringify(exampleSnapshot(4)));
    expect(await accepted(app, JSON.stringify(exampleSnapshot(4, { load: 1 })))).toBe(1);
    policy.addOwn([{ ip: '10.0.0.2', port: 1025 }]);
    const response = await parsesIn(async () =>
      expect(await rejectedPaths(await refresh(app, JSON.stringify(exampleSnapshot(4, { load: 2 }))))).toEqual(['instances[2].ip']),
    );
    expect(response).toBe(0);
    expect(registry.get(0)!.availSlots).toBe(199);
  });
});

describe('the loads template against the whole path', () => {
  /** One step of a Controller's life: what the next body is, from the last one sent. */
  type Step =
    | { kind: 'loads'; instance: number; slots: number; blocks: number }
    | { kind: 'edit'; at: number; cut: number; put: string }
    | { kind: 'model'; instance: number }
    | { kind: 'resend' }
    | { kind: 'layout' };
  const N = 6;
  const step: fc.Arbitrary<Step> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('loads' as const),
        instance: fc.nat({ max: N - 1 }),
        slots: fc.nat({ max: 210 }),
        blocks: fc.nat({ max: 1030 }),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('edit' as const),
        at: fc.nat(),
        cut: fc.nat({ max: 2 }),
        put: fc.string({ unit: fc.constantFrom(...'0123456789-.e ,:{}[]"\\a'), maxLength: 2 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('model' as const), instance: fc.nat({ max: N - 1 }) }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'resend' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'layout' as const }) },
  );

  /** What a route answered and holds, without what differs by design (generation, time). */
  async function outcome(app: Hono, res: Response) {
    const answer =
      res.status === 200
        ? { status: 200 }
        : { status: res.status, paths: ((await res.json()) as ErrorEnvelope).issues?.map((i) => i.path) };
    const { instances, groups, peers, counts } = (await (await app.request('/v1/instances')).json()) as Record<string, unknown>;
    return { answer, view: { instances, groups, peers, counts } };
  }

  test('every body gets the answer and leaves the state that parsing it would', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), fc.boolean(), async (steps, indented) => {
        const fast = setup();
        // The reference route never reads by template: something else applied before each of its bodies.
        const whole = setup();
        const body = exampleSnapshot(N);
        let write = indented ? pretty : (b: unknown) => JSON.stringify(b);
        let text = write(body);
        const sent: string[] = [];
        for (const s of [{ kind: 'resend' } as Step, ...steps]) {
          if (s.kind === 'loads') {
            body.instances[s.instance]!.dynamic_info.avail_slots_num = s.slots;
            body.instances[s.instance]!.dynamic_info.avail_block_num = s.blocks;
            text = write(body);
          } else if (s.kind === 'model') {
            body.instances[s.instance]!.model_name = `${body.instances[s.instance]!.model_name}x`;
            text = write(body);
          } else if (s.kind === 'layout') {
            write = write === pretty ? (b: unknown) => JSON.stringify(b) : pretty;
            text = write(body);
          } else if (s.kind === 'edit') {
            const at = s.at % (text.length + 1);
            text = text.slice(0, at) + s.put + text.slice(at + s.cut);
          }
          sent.push(text);
          whole.registry.repeat();
          const mine = await outcome(fast.app, await refresh(fast.app, text));
          const theirs = await outcome(whole.app, await refresh(whole.app, text));
          expect([sent.length, mine]).toEqual([sent.length, theirs]);
          // An edited text that was refused leaves the Controller's next body to be built from its snapshot.
          if (mine.answer.status !== 200) text = write(body);
        }
      }),
      { numRuns: 150 },
    );
  });
});

/** A body as a Controller that indents would write it. */
function pretty(body: unknown): string {
  return JSON.stringify(body, null, 2);
}
