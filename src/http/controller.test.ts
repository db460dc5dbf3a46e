import { describe, expect, test } from 'bun:test';
import { createControllerApp } from '../apps/controller.ts';
import { DEFAULT_TIMING } from '../controller/types.ts';

const entry = (id: number, ip: string) => ({
  id,
  manage_url: `http://${ip}:2000`,
  inference_url: `http://${ip}:3000`,
  model_name: 'm',
  server_ip: ip,
  devices: [{ device_logical_id: '0', device_ip: ip }],
  role: 'decode',
});

function app() {
  const spec = {
    coordinators: [],
    timing: DEFAULT_TIMING,
    rates: { p: 0, d: 0 },
    instances: [
      {
        id: 1,
        manageUrl: 'http://10.0.0.1:2000',
        inferenceUrl: 'http://10.0.0.1:3000',
        modelName: 'm',
        serverIp: '10.0.0.1',
        devices: [{ logicalId: '0', ip: '10.0.0.1' }],
        role: 'prefill' as const,
        staticInfo: { maxSeqLen: 2048, maxOutputLen: 512, totalSlots: 8, totalBlocks: 64, blockSize: 16 },
      },
    ],
  };
  // Not started: the routes act on the controller's state alone.
  return createControllerApp({
    spec,
    rankTable: { server_list: [{ server_ip: '10.0.0.9', device: [{ device_id: '0', device_ip: '10.1.0.9' }] }] },
  });
}

const dev = (ip: string, id = '0') => ({ device_logical_id: id, device_ip: ip });

const post = (a: ReturnType<typeof app>, body: unknown, contentType = 'application/json') =>
  a.managementApp.request('/v1/cluster/instances', {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const ids = async (a: ReturnType<typeof app>) =>
  ((await (await a.managementApp.request('/v1/cluster')).json()) as { instances: { id: number }[] }).instances.map((i) => i.id);

describe('controller API', () => {
  test('GET /v1/cluster shows desired, observed and per-instance state', async () => {
    const res = await app().managementApp.request('/v1/cluster');
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, any>;
    expect(body.desired.instances[0]).toMatchObject({ id: 1, role: 'prefill', server_ip: '10.0.0.1' });
    expect(body.desired.timing.cluster_synchronization_seconds).toBe(1);
    expect(body.instances[0]).toMatchObject({ id: 1, state: 'unreachable', in_snapshot: false, last_error: null });
    expect(body.observed.snapshot_ids).toEqual([]);
  });

  test('POST adds an instance (201); the rank table supplies devices when the entry has none', async () => {
    const a = app();
    const res = await post(a, entry(2, '10.0.0.2'));
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ id: 2, role: 'decode' });
    const { devices: _, ...bare } = entry(3, '10.0.0.9');
    expect((await post(a, bare)).status).toBe(201);
    const cluster = (await (await a.managementApp.request('/v1/cluster')).json()) as Record<string, any>;
    expect(cluster.desired.instances[2].devices).toEqual([{ device_logical_id: '0', device_ip: '10.1.0.9' }]);
  });

  test('request errors are 400 and change nothing', async () => {
    const a = app();
    expect((await post(a, entry(2, '10.0.0.2'), 'text/plain')).status).toBe(400);
    expect((await post(a, '{"id":')).status).toBe(400);
    expect(await ids(a)).toEqual([1]);
  });

  test('an entry off the schema is 422 with every field path, and changes nothing', async () => {
    const a = app();
    const res = await post(a, {
      ...entry(2, 'nope'),
      manage_url: 'ftp://x',
      devices: [{ device_logical_id: 'a', device_ip: '10.0.0.2' }],
      extra: 1,
    });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error_type: string; issues: { path: string }[] };
    expect(body.error_type).toBe('UnprocessableEntity');
    expect(body.issues.map((i) => i.path).sort()).toEqual(['devices[0].device_logical_id', 'extra', 'manage_url', 'server_ip']);
    const noDevices = await post(a, { ...entry(2, '10.0.0.5'), devices: undefined });
    expect(noDevices.status).toBe(422);
    expect(((await noDevices.json()) as { issues: { path: string }[] }).issues[0]!.path).toBe('devices');
    expect((await post(a, [])).status).toBe(422);
    expect(await ids(a)).toEqual([1]);
  });

  test('an id or server_ip already taken is 409 naming the field', async () => {
    const a = app();
    const res = await post(a, entry(1, '10.0.0.2'));
    expect(res.status).toBe(409);
    expect(((await res.json()) as { issues: { path: string }[] }).issues[0]!.path).toBe('id');
    const ip = await post(a, entry(2, '10.0.0.1'));
    expect(((await ip.json()) as { issues: { path: string }[] }).issues[0]!.path).toBe('server_ip');
    expect(await ids(a)).toEqual([1]);
  });

  test('DELETE: a bad id or force is 400, an unknown id 404, a known one 202 and draining', async () => {
    const a = app();
    expect((await post(a, entry(2, '10.0.0.2'))).status).toBe(201);
    const bad = await a.managementApp.request('/v1/cluster/instances/x1', { method: 'DELETE' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { issues: { path: string }[] }).issues[0]!.path).toBe('id');
    const badForce = await a.managementApp.request('/v1/cluster/instances/1?force=yes', { method: 'DELETE' });
    expect(badForce.status).toBe(400);
    expect(((await badForce.json()) as { issues: { path: string }[] }).issues[0]!.path).toBe('force');
    expect((await a.managementApp.request('/v1/cluster/instances/7', { method: 'DELETE' })).status).toBe(404);
    // One of two instances is half the cluster: within the default guard (0.5).
    const ok = await a.managementApp.request('/v1/cluster/instances/1', { method: 'DELETE' });
    expect(ok.status).toBe(202);
    const cluster = (await (await a.managementApp.request('/v1/cluster')).json()) as Record<string, any>;
    expect(cluster.instances[0].state).toBe('draining');
    await a.close();
  });

  test('a known path asked with a method it does not serve is 405 with Allow; an unknown path 404', async () => {
    const a = app();
    for (const [path, method, allow] of [
      ['/v1/cluster/instances', 'PUT', 'POST'],
      ['/v1/cluster', 'POST', 'GET, HEAD'],
      ['/v1/cluster/instances/1', 'PATCH', 'DELETE'],
      ['/v1/cluster/instances/1', 'GET', 'DELETE'],
    ] as const) {
      const res = await a.managementApp.request(path, { method, ...(method === 'GET' ? {} : { body: '{}' }) });
      expect({ path, method, status: res.status, allow: res.headers.get('allow') }).toEqual({ path, method, status: 405, allow });
      expect(((await res.json()) as { error: string }).error).toContain(`${method} is not served on ${path}`);
    }
    expect((await a.managementApp.request('/v1/nothing', { method: 'POST' })).status).toBe(404);
    expect(await ids(a)).toEqual([1]);
  });

  test('what agents would refuse is refused at the door: another device count 422, a taken address or device 409', async () => {
    const a = app();
    const issues = async (res: Response) => ({ status: res.status, issues: ((await res.json()) as { issues: unknown[] }).issues });
    expect(await issues(await post(a, { ...entry(2, '10.0.0.2'), devices: [dev('10.0.0.2'), dev('10.0.0.2', '1')] }))).toEqual({
      status: 422,
      issues: [
        {
          path: 'devices',
          message:
            "has 2 devices, the cluster's instances 1 (as instance 1): agents pair devices by position, so every instance has as many",
        },
      ],
    });
    expect(await issues(await post(a, { ...entry(2, '10.0.0.2'), manage_url: 'HTTP://10.0.0.1:2000/' }))).toEqual({
      status: 409,
      issues: [
        { path: 'manage_url', message: "manage_url HTTP://10.0.0.1:2000 is already instance 1's (written http://10.0.0.1:2000 there)" },
      ],
    });
    expect(await issues(await post(a, { ...entry(2, '10.0.0.2'), inference_url: 'http://10.0.0.1:3000' }))).toMatchObject({
      status: 409,
      issues: [{ path: 'inference_url' }],
    });
    expect(await issues(await post(a, { ...entry(2, '10.0.0.2'), devices: [dev('10.0.0.1', '000')] }))).toMatchObject({
      status: 409,
      issues: [{ path: 'devices[0]', message: "device 10.0.0.1 #000 is already instance 1's (written 10.0.0.1 #0 there)" }],
    });
    // One IPv6 server, spelt two ways.
    expect((await post(a, { ...entry(2, '10.0.0.2'), server_ip: '::1' })).status).toBe(201);
    expect(await issues(await post(a, { ...entry(3, '10.0.0.3'), server_ip: '0:0:0:0:0:0:0:1' }))).toEqual({
      status: 409,
      issues: [{ path: 'server_ip', message: "server_ip 0:0:0:0:0:0:0:1 is already instance 2's (written ::1 there)" }],
    });
    expect(await ids(a)).toEqual([1, 2]);
  });

  test('an id of 2^53 is refused as too large, a bad URL once, an unknown key in plain words', async () => {
    const a = app();
    const body = JSON.stringify({ ...entry(2, '10.0.0.2'), inference_url: 'nope', colour: 'red' }).replace(
      '"id":2',
      '"id":9007199254740992',
    );
    const res = await post(a, body);
    expect(res.status).toBe(422);
    expect(((await res.json()) as { issues: unknown[] }).issues).toEqual([
      { path: 'id', message: 'must be at most 2^53-1 (9007199254740991): larger ids cannot be carried exactly' },
      { path: 'inference_url', message: 'must be an http(s) URL' },
      { path: 'colour', message: 'is not a known key here (misspelt, or in the wrong place)' },
    ]);
    const max = await post(a, JSON.stringify(entry(2, '10.0.0.2')).replace('"id":2', '"id":9007199254740991'));
    expect(max.status).toBe(201);
  });

  test('DELETE past the mass-removal guard is 409 naming force and changes nothing; force=true removes it', async () => {
    const a = app();
    const refused = await a.managementApp.request('/v1/cluster/instances/1', { method: 'DELETE' });
    expect(refused.status).toBe(409);
    const body = (await refused.json()) as { error: string; issues: { path: string }[] };
    expect(body.error).toBe(
      'instance 1 not removed: it removes 1 of 1 instance (100%), more than max_removed_fraction 0.5 allows; send force=true to remove it anyway',
    );
    expect(body.issues[0]!.path).toBe('force');
    const cluster = async () => (await (await a.managementApp.request('/v1/cluster')).json()) as Record<string, any>;
    expect((await cluster()).instances[0].state).toBe('unreachable');
    expect((await cluster()).desired.max_removed_fraction).toBe(0.5);
    expect((await a.managementApp.request('/v1/cluster/instances/1?force=true', { method: 'DELETE' })).status).toBe(202);
    expect((await cluster()).instances[0].state).toBe('draining');
    await a.close();
  });

  test('without a topology file: topology_file is null and a reload is 409', async () => {
    const a = app();
    expect(((await (await a.managementApp.request('/v1/cluster')).json()) as Record<string, unknown>)['topology_file']).toBeNull();
    const res = await a.managementApp.request('/v1/cluster/reload', { method: 'POST' });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: string }).error).toBe('this controller runs without a topology file');
  });

  test('probes and metrics', async () => {
    const a = app();
    expect((await a.managementApp.request('/v1/readiness')).status).toBe(200);
    const metrics = await (await a.managementApp.request('/metrics')).text();
    expect(metrics).toContain('pdlink_controller_instances{state="unreachable"} 1');
  });
});
