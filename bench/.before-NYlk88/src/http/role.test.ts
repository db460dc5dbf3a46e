import { describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { peer, request, setupRole } from '../../test/fixtures/role/controller.ts';
import seedExample from '../../test/fixtures/role/seed-example.json';
import { onError, onNotFound } from './envelope.ts';
import { roleRoutes } from './role.ts';

function setup(bodyLimitBytes?: number) {
  const role = setupRole();
  const app = new Hono();
  app.onError(onError);
  app.notFound(onNotFound);
  app.route('/', roleRoutes({ controller: role.controller, ...(bodyLimitBytes === undefined ? {} : { bodyLimitBytes }) }));
  const post = async (path: string, body: unknown, contentType: string | null = 'application/json') => {
    const headers: Record<string, string> = contentType === null ? {} : { 'content-type': contentType };
    const res = await app.request(path, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return {
      status: res.status,
      body: (await res.json()) as { error?: string; error_type?: string; issues?: { path: string; message: string }[]; result?: string },
    };
  };
  return { ...role, app, post };
}

/** The seed example with one change, applied to a deep copy. */
function seedWith(change: (body: any) => void): unknown {
  const body = structuredClone(seedExample);
  change(body);
  return body;
}

describe('POST /v1/role/{role}: 200', () => {
  test('the seed\'s own example (loopback addresses) → 200 {"result":"OK"}, exactly', async () => {
    const { app, controller } = setup();
    const res = await app.request('/v1/role/prefill', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(seedExample),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('{"result":"OK"}');
    await controller.settled();
    // The repeated peer logical id pairs local devices 0 and 1 with the same peer device.
    expect(controller.status().linkStatus.peers.map((p) => [p.target, p.device, p.localDevice, p.remote])).toEqual([
      ['5.6.7.8', 0, 0, '127.0.0.3:26000'],
      ['5.6.7.8', 1, 1, '127.0.0.3:26000'],
    ]);
  });

  test('decode with the same body, peers omitted, unknown fields, a +json content type', async () => {
    const { post } = setup();
    expect(await post('/v1/role/decode', seedExample)).toEqual({ status: 200, body: { result: 'OK' } });
    expect(
      await post(
        '/v1/role/decode',
        seedWith((b) => delete b.peers),
      ),
    ).toEqual({ status: 200, body: { result: 'OK' } });
    expect(
      await post(
        '/v1/role/prefill',
        seedWith((b) => (b.extra = { x: 1 })),
        'application/vnd.mindie+json; charset=utf-8',
      ),
    ).toEqual({ status: 200, body: { result: 'OK' } });
  });

  test('a peer without server_ip → 200; its status rows show target null', async () => {
    const { post, controller } = setup();
    expect(
      await post(
        '/v1/role/decode',
        seedWith((b) => delete b.peers[0].server_ip),
      ),
    ).toEqual({ status: 200, body: { result: 'OK' } });
    await controller.settled();
    expect(controller.status().linkStatus.peers.map((p) => [p.target, p.remote])).toEqual([
      [null, '127.0.0.3:26000'],
      [null, '127.0.0.3:26000'],
    ]);
  });

  test('a peer on this server and device address with other logical ids → 200, linked to those devices', async () => {
    const { post, controller } = setup();
    const body = seedWith((b) => {
      b.local.server_ip = '127.0.0.2';
      b.peers = [{ server_ip: '127.0.0.2', device: ['2', '03'].map((id) => ({ device_ip: '127.0.0.2', device_logical_id: id })) }];
    });
    expect(await post('/v1/role/decode', body)).toEqual({ status: 200, body: { result: 'OK' } });
    await controller.whenReady();
    expect(controller.status().linkStatus.peers.map((p) => [p.localDevice, p.peerDevice, p.remote, p.link])).toEqual([
      [0, 2, '127.0.0.2:26002', 'ok'],
      [1, 3, '127.0.0.2:26003', 'ok'],
    ]);
  });

  test('answered at once: the 200 comes while the peer has not answered the link', async () => {
    const { post, executor, app, controller } = setup();
    executor.hold();
    expect((await post('/v1/role/decode', seedExample)).status).toBe(200);
    const status = (await (await app.request('/v1/status')).json()) as any;
    expect(status.service).toMatchObject({ roleStatus: 'RoleSwitching' });
    expect(status.linkStatus.peers.map((p: { link: string }) => p.link)).toEqual(['linking', 'linking']);
    executor.release();
    await controller.whenReady();
  });
});

describe('POST /v1/role/{role}: 400 request errors', () => {
  test('unknown role in the URL, before the body is looked at', async () => {
    const { post, controller } = setup();
    for (const role of ['flex', 'Prefill', 'DECODE', 'mix', '%20prefill']) {
      const res = await post(`/v1/role/${role}`, seedExample);
      expect(res.status).toBe(400);
      expect(res.body.error_type).toBe('BadRequest');
      expect(res.body.error).toContain('role: must be "prefill" or "decode"');
      expect(res.body.issues).toEqual([{ path: 'role', message: expect.stringContaining('must be') }]);
    }
    expect((await post('/v1/role/flex', '{')).status).toBe(400);
    expect(controller.roleStatus).toBe('RoleUnknown');
  });

  test('malformed JSON, wrong or missing content type, empty body', async () => {
    const { post, controller } = setup();
    const cases: [unknown, string | null, string][] = [
      ['{"local": ', 'application/json', 'not valid JSON'],
      ["{'local': {}}", 'application/json', 'not valid JSON'],
      [JSON.stringify(seedExample), 'text/plain', 'content-type must be application/json, got "text/plain"'],
      [JSON.stringify(seedExample), null, 'content-type must be application/json'],
      ['', 'application/json', 'request body is empty'],
      ['   ', 'application/json', 'request body is empty'],
    ];
    for (const [body, type, message] of cases) {
      const res = await post('/v1/role/decode', body, type);
      expect(res.status).toBe(400);
      expect(res.body.error).toContain(message);
      expect(typeof res.body.error_type).toBe('string');
    }
    expect(controller.roleStatus).toBe('RoleUnknown');
  });

  test('a body over the limit → 413', async () => {
    const { post } = setup(64);
    const res = await post('/v1/role/decode', seedExample);
    expect(res.status).toBe(413);
    expect(res.body.error_type).toBe('PayloadTooLarge');
  });

  test('other methods and paths → 404 with the envelope', async () => {
    const { app } = setup();
    for (const [method, path] of [
      ['GET', '/v1/role/prefill'],
      ['POST', '/v1/role'],
      ['POST', '/v1/role/prefill/x'],
    ]) {
      const res = await app.request(path!, { method: method! });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error_type: string }).error_type).toBe('NotFound');
    }
  });
});

describe('POST /v1/role/{role}: 422 off-spec bodies, the field named', () => {
  const cases: [string, unknown, string, string][] = [
    ['local missing', seedWith((b) => delete b.local), 'local', 'is required'],
    ['local not an object', seedWith((b) => (b.local = 'x')), 'local', ''],
    ['local.server_ip missing', seedWith((b) => delete b.local.server_ip), 'local.server_ip', 'is required'],
    ['local.server_ip not an IP', seedWith((b) => (b.local.server_ip = 'xxx.xxx.xxx.xxx')), 'local.server_ip', 'IPv4 or IPv6'],
    ['local.server_ip a number', seedWith((b) => (b.local.server_ip = 1234)), 'local.server_ip', 'must be a string'],
    ['local.device missing', seedWith((b) => delete b.local.device), 'local.device', 'is required'],
    ['local.device empty', seedWith((b) => (b.local.device = [])), 'local.device', 'at least one device'],
    [
      'device_logical_id a word',
      seedWith((b) => (b.local.device[1].device_logical_id = 'one')),
      'local.device[1].device_logical_id',
      'integer string',
    ],
    [
      'device_logical_id negative',
      seedWith((b) => (b.local.device[1].device_logical_id = '-1')),
      'local.device[1].device_logical_id',
      'integer string',
    ],
    [
      'device_logical_id a number',
      seedWith((b) => (b.local.device[0].device_logical_id = 0)),
      'local.device[0].device_logical_id',
      'integer string',
    ],
    [
      'device_logical_id missing',
      seedWith((b) => delete b.peers[0].device[0].device_logical_id),
      'peers[0].device[0].device_logical_id',
      'is required',
    ],
    [
      'local device_ip not an IP',
      seedWith((b) => (b.local.device[0].device_ip = 'xxx.xxx.xxx.xxx')),
      'local.device[0].device_ip',
      'IPv4 or IPv6',
    ],
    [
      'peer device_ip not an IP',
      seedWith((b) => (b.peers[0].device[1].device_ip = '10.0.0')),
      'peers[0].device[1].device_ip',
      'IPv4 or IPv6',
    ],
    [
      'duplicate local logical ids',
      seedWith((b) => (b.local.device[1].device_logical_id = '0')),
      'local.device[1].device_logical_id',
      'duplicate device_logical_id 0',
    ],
    ['a peer with fewer devices', seedWith((b) => b.peers[0].device.pop()), 'peers[0].device', 'has 1 devices, the local node has 2'],
    [
      'a peer with more devices',
      seedWith((b) => b.peers[0].device.push({ device_ip: '127.0.0.3', device_logical_id: '2' })),
      'peers[0].device',
      'has 3 devices',
    ],
    ['a peer equal to the local node', seedWith((b) => (b.peers = [structuredClone(b.local)])), 'peers[0]', 'local node itself'],
    ['peers not an array', seedWith((b) => (b.peers = {})), 'peers', 'array of peers'],
    [
      'a local device this agent does not serve',
      seedWith((b) => (b.local.device[1].device_logical_id = '3')),
      'local.device[1].device_logical_id',
      'no link endpoint for device 3',
    ],
    [
      'a local device on another address',
      seedWith((b) => (b.local.device[0].device_ip = '127.0.0.9')),
      'local.device[0].device_ip',
      'device 0 listens on 127.0.0.2',
    ],
    [
      'a peer link port beyond 65535',
      seedWith((b) => (b.peers[0].device[0].device_logical_id = '40000')),
      'peers[0].device[0].device_logical_id',
      'exceeds 65535',
    ],
    [
      'local logical ids "0" and "00" (one device twice)',
      seedWith((b) => (b.local.device[1].device_logical_id = '00')),
      'local.device[1].device_logical_id',
      'duplicate device_logical_id 00',
    ],
    ['a JSON array', [seedExample], '', 'must be a JSON object'],
    ['JSON null', null, '', 'must be a JSON object'],
  ];
  for (const [name, body, path, fragment] of cases) {
    test(name, async () => {
      const { post, controller } = setup();
      const res = await post('/v1/role/decode', body);
      expect(res.status).toBe(422);
      expect(res.body.error_type).toBe('UnprocessableEntity');
      const issue = res.body.issues?.find((i) => i.path === path);
      expect(issue, JSON.stringify(res.body.issues)).toBeDefined();
      expect(issue!.message).toContain(fragment);
      expect(res.body.error).toContain(path === '' ? fragment : `${path}: `);
      expect(controller.roleStatus).toBe('RoleUnknown');
    });
  }
});

describe('GET /v1/status', () => {
  test('the shape of the issue: service.roleStatus/currentRole and linkStatus.peers[{target, device, link}]', async () => {
    const { app, controller } = setup();
    let res = await app.request('/v1/status');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      service: { roleStatus: 'RoleUnknown', currentRole: 'none', queuedPosts: 0 },
      linkStatus: { desired: 0, ok: 0, linking: 0, failed: 0, peers: [] },
    });
    controller.submit(request('decode', [peer('127.0.0.10')]));
    await controller.whenReady();
    res = await app.request('/v1/status');
    const body = (await res.json()) as any;
    expect(body.service).toEqual({ roleStatus: 'RoleReady', currentRole: 'decode', queuedPosts: 0 });
    expect(body.linkStatus.peers.map((p: any) => ({ target: p.target, device: p.device, link: p.link }))).toEqual([
      { target: '127.0.0.10', device: 0, link: 'ok' },
      { target: '127.0.0.10', device: 1, link: 'ok' },
    ]);
  });
});

test('a body limit that is not a positive integer is refused when the routes are built', () => {
  const { controller } = setupRole();
  expect(() => roleRoutes({ controller, bodyLimitBytes: 0 })).toThrow('bodyLimitBytes must be a positive integer');
});
