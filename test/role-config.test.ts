/**
 * Where the role API listens, by the seed's precedence: IP from env MIES_CONTAINER_MANAGEMENT_IP,
 * else `managementIpAddress`, else `ipAddress`; port from `managementPort`, else `port`. Each step
 * in its own test, on the resolved settings and on a real `pdlink instance` process.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveInstanceSettings } from '../src/config/instance.ts';
import { runPdlink, startPdlink } from './support/child.ts';
import { randomBase } from './fixtures/role/harness.ts';

const ENV = 'MIES_CONTAINER_MANAGEMENT_IP';
// "Absent" must mean absent for the children too, whatever the runner's environment holds.
delete process.env[ENV];
const TEST_TIMEOUT_MS = 30_000;
const dir = mkdtempSync(join(tmpdir(), 'pdlink-role-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const ENV_IP = '127.0.6.2';
const MANAGEMENT_IP = '127.0.6.3';
const SERVER_IP = '127.0.6.4';
const DEVICE_IP = '127.0.6.5';

interface ServerConfig {
  ipAddress?: string;
  managementIpAddress?: string;
  port?: number;
  managementPort?: number;
}

function writeConfig(server: ServerConfig, base = randomBase()): string {
  const path = join(dir, `config-${files++}.json`);
  writeFileSync(
    path,
    JSON.stringify({ ServerConfig: server, pdlink: { link_base_port: base, devices: [{ device_logical_id: 0, device_ip: DEVICE_IP }] } }),
  );
  return path;
}

const port = () => 20000 + Math.floor(Math.random() * 30000);

/**
 * Starts `pdlink instance` on `server` (ports filled in by `ports`), retrying other ports if one
 * is taken; returns the management URL it printed, after checking the role API answers there and
 * that SIGTERM stops it with status 0.
 */
async function listeningUrl(
  server: (ports: { port: number; managementPort: number }) => ServerConfig,
  env: Record<string, string> = {},
): Promise<{ url: string; ports: { port: number; managementPort: number } }> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const ports = { port: port(), managementPort: port() };
    let child;
    try {
      child = await startPdlink(['instance', '--config', writeConfig(server(ports))], { listeners: ['management'], env });
    } catch (err) {
      lastError = err;
      if (!/in use|cannot listen|cannot open link endpoint/i.test(String(err))) throw err;
      continue;
    }
    try {
      const url = child.urls.management!;
      const status = await fetch(`${url}/v1/status`);
      expect(status.status).toBe(200);
      expect(((await status.json()) as { service: { roleStatus: string } }).service.roleStatus).toBe('RoleUnknown');
      expect(await child.kill('SIGTERM')).toBe(0);
      return { url, ports };
    } finally {
      await child.kill();
    }
  }
  throw lastError;
}

describe('management IP (resolved settings)', () => {
  const all = { ipAddress: SERVER_IP, managementIpAddress: MANAGEMENT_IP };
  test(`1. env ${ENV} first`, () => {
    expect(resolveInstanceSettings({ config: writeConfig(all) }, { [ENV]: ENV_IP }).manage.ip).toBe(ENV_IP);
  });
  test('2. without the env: managementIpAddress', () => {
    expect(resolveInstanceSettings({ config: writeConfig(all) }, {}).manage.ip).toBe(MANAGEMENT_IP);
  });
  test('3. without the env and managementIpAddress: ipAddress', () => {
    expect(resolveInstanceSettings({ config: writeConfig({ ipAddress: SERVER_IP }) }, {}).manage.ip).toBe(SERVER_IP);
  });
  test('an empty env value counts as absent; a value that is not an IP is refused, naming the variable', () => {
    expect(resolveInstanceSettings({ config: writeConfig(all) }, { [ENV]: '' }).manage.ip).toBe(MANAGEMENT_IP);
    expect(() => resolveInstanceSettings({ config: writeConfig(all) }, { [ENV]: 'controller.local' })).toThrow(
      `${ENV}: must be an IPv4 or IPv6 address`,
    );
  });
});

describe('management port (resolved settings)', () => {
  test('1. managementPort first', () => {
    expect(resolveInstanceSettings({ config: writeConfig({ port: 2000, managementPort: 2001 }) }, {}).manage.port).toBe(2001);
  });
  test('2. without managementPort: port', () => {
    expect(resolveInstanceSettings({ config: writeConfig({ port: 2000 }) }, {}).manage.port).toBe(2000);
  });
});

describe('where pdlink instance listens', () => {
  test(
    `IP: env ${ENV} over managementIpAddress and ipAddress`,
    async () => {
      const { url, ports } = await listeningUrl((p) => ({ ipAddress: SERVER_IP, managementIpAddress: MANAGEMENT_IP, ...p }), {
        [ENV]: ENV_IP,
      });
      expect(url).toBe(`http://${ENV_IP}:${ports.managementPort}`);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'IP: managementIpAddress when the env is absent',
    async () => {
      const { url, ports } = await listeningUrl((p) => ({ ipAddress: SERVER_IP, managementIpAddress: MANAGEMENT_IP, ...p }));
      expect(url).toBe(`http://${MANAGEMENT_IP}:${ports.managementPort}`);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'IP: ipAddress when neither the env nor managementIpAddress is there',
    async () => {
      const { url, ports } = await listeningUrl((p) => ({ ipAddress: SERVER_IP, ...p }));
      expect(url).toBe(`http://${SERVER_IP}:${ports.managementPort}`);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'port: managementPort over port',
    async () => {
      const { url, ports } = await listeningUrl((p) => ({ ipAddress: SERVER_IP, ...p }));
      expect(url).toBe(`http://${SERVER_IP}:${ports.managementPort}`);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'port: port when managementPort is absent',
    async () => {
      const { url, ports } = await listeningUrl((p) => ({ ipAddress: SERVER_IP, port: p.port }));
      expect(url).toBe(`http://${SERVER_IP}:${ports.port}`);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    `an env ${ENV} that is not an IP exits 2 naming it`,
    async () => {
      const { code, stderr } = await runPdlink(['instance', '--config', writeConfig({ ipAddress: SERVER_IP, managementPort: port() })], {
        env: { [ENV]: 'not-an-ip' },
      });
      expect(code).toBe(2);
      expect(stderr).toContain(`${ENV}: must be an IPv4 or IPv6 address, got "not-an-ip"`);
    },
    TEST_TIMEOUT_MS,
  );
});
