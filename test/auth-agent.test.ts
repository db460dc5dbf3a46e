/**
 * The instance agent's and the simulator's trust boundary across processes: the management token
 * on every route but the probes (the simulator's own `/sim/*` routes included), the allow-list on
 * link calls (LLM_PARAM_INVALID without connecting) and on role posts (422 naming the field), and
 * a simulated cluster whose launcher, engines and Coordinator all run with the token.
 */
import { afterAll, afterEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { startPdlink, type PdlinkChild } from './support/child.ts';
import { unusedLinkPort } from './support/link-port.ts';

const TOKEN = 'agent-mgmt-token-55aa66bb77cc';
const dir = mkdtempSync(join(tmpdir(), 'pdlink-auth-agent-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

const tokenFile = (): string => {
  const path = join(dir, 'token');
  writeFileSync(path, `${TOKEN}\n`, { mode: 0o600 });
  return path;
};
const bearer = { authorization: `Bearer ${TOKEN}` };

let configs = 0;
async function startAgent(pdlink: Record<string, unknown>, ip: string): Promise<PdlinkChild> {
  const config = join(dir, `agent-${configs++}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      ServerConfig: { ipAddress: ip, managementIpAddress: ip },
      pdlink: {
        link_base_port: await unusedLinkPort(ip),
        cluster_id: '1',
        devices: [{ device_logical_id: 0, device_ip: ip }],
        ...pdlink,
      },
    }),
  );
  const child = await startPdlink(['instance', '--config', config, '--manage_port', '0'], { listeners: ['management', 'link-0'] });
  cleanups.push(() => child.kill('SIGTERM'));
  return child;
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('agent management token', () => {
  test('401 without or with a wrong token, nothing changes; probes stay open; the token passes', async () => {
    const child = await startAgent({ auth: { management_token_file: tokenFile() } }, '127.0.0.31');
    const url = child.urls.management!;
    const cache = { cache_id: 1, num_blocks: 4, block_bytes: 4096 };
    for (const headers of [{}, { authorization: 'Bearer nope' }]) {
      const res = await post(`${url}/v1/kv/caches`, cache, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect((await post(`${url}/v1/role/decode`, {}, headers)).status).toBe(401);
      for (const path of ['/v1/status', '/v1/links', '/metrics']) expect((await fetch(`${url}${path}`, { headers })).status).toBe(401);
    }
    for (const probe of ['/v1/health', '/v2/health/live']) expect((await fetch(`${url}${probe}`)).status).toBe(200);
    const status = (await (await fetch(`${url}/v1/status`, { headers: bearer })).json()) as { service: { roleStatus: string } };
    expect(status.service.roleStatus).toBe('RoleUnknown');
    // The refused cache creation left nothing: creating it now succeeds (a duplicate would be 409).
    expect((await post(`${url}/v1/kv/caches`, cache, bearer)).status).toBe(200);
    expect(child.output()).not.toContain(TOKEN);
  });
});

describe('agent allow-list', () => {
  let listener: Server | undefined;
  let connections = 0;
  afterEach(() => {
    listener?.close();
    listener = undefined;
  });

  test('a link call to an address outside the list gets LLM_PARAM_INVALID without connecting; a role post naming one gets 422', async () => {
    // A port that counts connections: the refused link must not touch it.
    listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener!.listen(0, '127.0.0.33', resolve));
    const port = (listener.address() as { port: number }).port;
    const child = await startAgent({ allowed_instance_networks: ['127.0.0.32/32', '127.0.0.34/32'] }, '127.0.0.32');
    const url = child.urls.management!;

    const link = await post(`${url}/v1/links/link`, {
      clusters: [
        { remote_cluster_id: 9, remote_ip_info: `127.0.0.33:${port}` },
        { remote_cluster_id: 10, remote_ip_info: '169.254.169.254:80' },
      ],
      timeout: 2000,
    });
    expect(link.status).toBe(200);
    const body = (await link.json()) as { ret_name: string; rets: { name: string }[] };
    expect(body.ret_name).toBe('LLM_PARAM_INVALID');
    expect(body.rets.map((r) => r.name)).toEqual(['LLM_PARAM_INVALID', 'LLM_PARAM_INVALID']);
    expect(connections).toBe(0);
    expect(((await (await fetch(`${url}/v1/links`)).json()) as { links: unknown[] }).links).toEqual([]);

    const role = await post(`${url}/v1/role/decode`, {
      local: { server_ip: '127.0.0.32', device: [{ device_logical_id: '0', device_ip: '127.0.0.32' }] },
      peers: [
        { server_ip: '127.0.0.34', device: [{ device_logical_id: '0', device_ip: '127.0.0.34' }] },
        { server_ip: '127.0.0.33', device: [{ device_logical_id: '0', device_ip: '127.0.0.33' }] },
      ],
    });
    expect(role.status).toBe(422);
    const err = (await role.json()) as { issues: { path: string; message: string }[] };
    expect(err.issues.map((i) => i.path)).toEqual(['peers[1].device[0].device_ip']);
    expect(err.issues[0]!.message).toContain('outside pdlink.allowed_instance_networks');
    const status = (await (await fetch(`${url}/v1/status`)).json()) as { service: { roleStatus: string } };
    expect(status.service.roleStatus).toBe('RoleUnknown');
  });
});

describe('simulated cluster with a management token', () => {
  test('the launcher, the engines (release notices included) and the Coordinator all carry the token; outsiders get 401', async () => {
    const cluster = await SimCluster.start({ prefill: 1, decode: 1, managementTokenFile: tokenFile() });
    cleanups.push(() => cluster.stop());
    const res = await fetch(`${cluster.proxyUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pdlink-sim', prompt: 'hello there', max_tokens: 4 }),
    });
    expect(res.status).toBe(200);
    const p0 = cluster.engines.find((e) => e.role === 'prefill')!;
    expect((await fetch(`${p0.manageUrl}/sim/status`)).status).toBe(401);
    expect((await fetch(`${cluster.coordinatorUrl}/v1/instances`)).status).toBe(401);
    // The decoder's release notice reached the prefiller with the token: its blocks come back
    // before their 30 s lease could free them.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const status = await cluster.simStatus(p0.name);
      if (status.kv['held_requests'] === 0) break;
      if (Date.now() > deadline) throw new Error(`prefill blocks not released: ${JSON.stringify(status.kv)}`);
      await new Promise((r) => setImmediate(r));
    }
    expect((await cluster.simStatus(p0.name)).kv['leases_expired']).toBe(0);
  });
});
