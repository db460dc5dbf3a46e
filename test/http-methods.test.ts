/**
 * RFC 9110 on every listener of every process: a known path asked with a method it does not serve
 * is 405 with an `Allow` header naming the methods it does serve; an unknown path stays 404. Real
 * processes: the Coordinator (management and inference), `pdlink instance` (management),
 * `pdlink sim-engine` (management and inference) and `pdlink controller` (management).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPdlink, type PdlinkChild } from './support/child.ts';

const TEST_TIMEOUT_MS = 45_000;
const dir = mkdtempSync(join(tmpdir(), 'pdlink-methods-'));
const children: PdlinkChild[] = [];
let coordinator: PdlinkChild;
let instance: PdlinkChild;
let simEngine: PdlinkChild;
let controller: PdlinkChild;

/** A config with one device on `ip` at a random link port (the link port is not what is tested). */
function deviceConfig(name: string, ip: string): string {
  const path = join(dir, `${name}.json`);
  const base = 20_000 + Math.floor(Math.random() * 40_000);
  writeFileSync(path, JSON.stringify({ pdlink: { link_base_port: base, devices: [{ device_logical_id: 0, device_ip: ip }] } }));
  return path;
}

/** A topology file with no instance (the routes, not the cluster, are tested). */
function topologyFile(): string {
  const path = join(dir, 'topology.json');
  writeFileSync(path, JSON.stringify({ coordinators: [], instances: [] }));
  return path;
}

beforeAll(async () => {
  const started = await Promise.all([
    startPdlink(['coordinator', '--manage_port', '0', '--predict_port', '0'], { listeners: ['management', 'inference'], cwd: dir }),
    startPdlink(['instance', '--config', deviceConfig('instance', '127.0.9.2'), '--manage_ip', '127.0.9.2', '--manage_port', '0'], {
      listeners: ['management'],
    }),
    startPdlink(
      [
        'sim-engine',
        '--role',
        'prefill',
        '--model',
        'methods',
        '--config',
        deviceConfig('sim', '127.0.9.3'),
        '--manage_ip',
        '127.0.9.3',
        '--manage_port',
        '0',
        '--ip',
        '127.0.9.3',
        '--port',
        '0',
      ],
      { listeners: ['management', 'inference'] },
    ),
    startPdlink(['controller', '--config', topologyFile(), '--manage_port', '0'], { listeners: ['controller'] }),
  ]);
  children.push(...started);
  [coordinator, instance, simEngine, controller] = started as [PdlinkChild, PdlinkChild, PdlinkChild, PdlinkChild];
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all(children.map((c) => c.kill('SIGTERM')));
  rmSync(dir, { recursive: true, force: true });
});

/** [listener URL, path, method not served, the Allow header wanted]. */
type Case = [() => string, string, string, string];

async function expect405([url, path, method, allow]: Case): Promise<void> {
  const res = await fetch(`${url()}${path}`, { method, ...(method === 'GET' || method === 'HEAD' ? {} : { body: '{}' }) });
  expect({ path, method, status: res.status, allow: res.headers.get('allow') }).toEqual({ path, method, status: 405, allow });
  if (method !== 'HEAD') expect(await res.text()).toContain(`${method} is not served on ${path}`);
  else await res.arrayBuffer();
}

async function expect404(url: string, path: string): Promise<void> {
  for (const method of ['GET', 'POST']) {
    const res = await fetch(`${url}${path}`, { method });
    expect({ path, method, status: res.status, allow: res.headers.get('allow') }).toEqual({ path, method, status: 404, allow: null });
    await res.arrayBuffer();
  }
}

describe('405 with Allow on a known path, 404 on an unknown one', () => {
  test('Coordinator management listener', async () => {
    const url = () => coordinator.urls.management!;
    for (const c of [
      [url, '/v1/instances/refresh', 'GET', 'POST'],
      [url, '/v1/instances', 'DELETE', 'GET, HEAD'],
      [url, '/v1/transfers', 'POST', 'GET, HEAD'],
      [url, '/metrics', 'PUT', 'GET, HEAD'],
    ] as Case[])
      await expect405(c);
    await expect404(url(), '/v1/nothing');
  });

  test('Coordinator inference listener', async () => {
    const url = () => coordinator.urls.inference!;
    for (const c of [
      [url, '/v1/completions', 'GET', 'POST'],
      [url, '/v1/chat/completions', 'PUT', 'POST'],
      [url, '/v1/completions', 'HEAD', 'POST'],
      [url, '/v1/models', 'POST', 'GET, HEAD'],
    ] as Case[])
      await expect405(c);
    await expect404(url(), '/v1/nothing');
  });

  test('instance agent management listener', async () => {
    const url = () => instance.urls.management!;
    for (const c of [
      [url, '/v1/role/prefill', 'GET', 'POST'],
      [url, '/v1/status', 'POST', 'GET, HEAD'],
      [url, '/v1/links', 'DELETE', 'GET, HEAD'],
    ] as Case[])
      await expect405(c);
    await expect404(url(), '/v1/role');
  });

  test('simulator management and inference listeners', async () => {
    const manage = () => simEngine.urls.management!;
    const inference = () => simEngine.urls.inference!;
    for (const c of [
      [manage, '/sim/faults', 'PUT', 'DELETE, GET, HEAD, POST'],
      [manage, '/v1/role/decode', 'GET', 'POST'],
      [inference, '/v1/completions', 'GET', 'POST'],
      [inference, '/v1/models', 'POST', 'GET, HEAD'],
    ] as Case[])
      await expect405(c);
    await expect404(manage(), '/sim/nothing');
    await expect404(inference(), '/v1/nothing');
  });

  test('controller management listener', async () => {
    const url = () => controller.urls.controller!;
    for (const c of [
      [url, '/v1/cluster/instances', 'PUT', 'POST'],
      [url, '/v1/cluster', 'POST', 'GET, HEAD'],
      [url, '/v1/cluster/instances/7', 'GET', 'DELETE'],
    ] as Case[])
      await expect405(c);
    await expect404(url(), '/v1/nothing');
  });
});
