/**
 * Two `pdlink instance` processes on Deno (the device runtime through Deno.dlopen): the role API
 * over real HTTP with its error paths (nothing changes on a refused post), then a decode agent
 * linking to a prefill agent through the role API and pulling KV blocks over that link, byte for
 * byte, and both closing with exit code 0 on SIGTERM.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until, type ManagedProcess } from '../../src/sim/cluster/process.ts';
import { startOnDeno } from './support.ts';

const BLOCK = 4096;
const json = { 'content-type': 'application/json' };

interface Agent {
  readonly process: ManagedProcess;
  readonly ip: string;
  readonly url: string;
  readonly clusterId: string;
}

interface Status {
  service: { roleStatus: string; currentRole: string };
  linkStatus: { ok: number; peers: { target: string; device: string; link: string }[] };
}

/** Starts an agent with one device on a fresh loopback address; another link port when one is taken. */
async function startAgent(dir: string, net: string, last: number, linkBasePort: number): Promise<Agent> {
  const ip = `${net}.${last}`;
  const config = join(dir, `instance-${last}.json`);
  const pdlink = { link_base_port: linkBasePort, devices: [{ device_logical_id: 0, device_ip: ip }], pool: { threads: 2 } };
  writeFileSync(config, JSON.stringify({ ServerConfig: { ipAddress: ip, managementIpAddress: ip }, pdlink }));
  const process = await startOnDeno(`agent-${last}`, ['instance', '--config', config, '--manage_port', '0'], ['management', 'link-0']);
  const clusterId = /^pdlink: link-0 cluster_id (\d+)$/m.exec(process.output())![1]!;
  return { process, ip, url: process.urls['management']!, clusterId };
}

async function post(
  agent: Agent,
  path: string,
  body: unknown,
  headers: Record<string, string> = json,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${agent.url}${path}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

async function status(agent: Agent): Promise<Status> {
  return (await (await fetch(`${agent.url}/v1/status`)).json()) as Status;
}

const node = (agent: Agent) => ({ server_ip: agent.ip, device: [{ device_logical_id: '0', device_ip: agent.ip }] });

function pattern(blocks: readonly number[]): Uint8Array {
  const out = new Uint8Array(blocks.length * BLOCK);
  blocks.forEach((b, k) => {
    for (let i = 0; i < BLOCK; i++) out[k * BLOCK + i] = (b * 31 + i * 7 + 5) & 0xff;
  });
  return out;
}

const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

Deno.test('two agents on Deno: role API errors change nothing, then D links to P and pulls its KV blocks', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-deno-agents-'));
  const agents: Agent[] = [];
  try {
    for (let attempt = 0; agents.length === 0; attempt++) {
      const net = `127.${100 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 256)}`;
      const linkBasePort = 20_000 + Math.floor(Math.random() * 40_000);
      try {
        agents.push(...(await Promise.all([startAgent(dir, net, 2, linkBasePort), startAgent(dir, net, 3, linkBasePort)])));
      } catch (err) {
        // Only a taken link port is worth another draw.
        if (attempt === 3 || !/cannot open link endpoint|in use/i.test(String(err))) throw err;
      }
    }
    const [p, d] = agents as [Agent, Agent];

    await t.step('role API: bad posts get 400 or 422 naming the field, and the agent stays as it was', async () => {
      const before = await status(d);
      assert.deepEqual(before.service, { roleStatus: 'RoleUnknown', currentRole: 'none', queuedPosts: 0 });
      const good = { local: node(d), peers: [node(p)] };

      const unknownRole = await post(d, '/v1/role/middle', good);
      assert.equal(unknownRole.status, 400);
      assert.deepEqual(
        unknownRole.body.issues.map((i: { path: string }) => i.path),
        ['role'],
      );
      assert.equal((await post(d, '/v1/role/decode', '{"local": ')).status, 400);
      assert.equal((await post(d, '/v1/role/decode', good, { 'content-type': 'text/plain' })).status, 400);

      const badIp = { local: { ...node(d), device: [{ device_logical_id: '0', device_ip: 'xxx.xxx.xxx.xxx' }] }, peers: [node(p)] };
      const offSpec = await post(d, '/v1/role/decode', badIp);
      assert.equal(offSpec.status, 422);
      assert.ok(
        offSpec.body.issues.some((i: { path: string }) => i.path === 'local.device[0].device_ip'),
        JSON.stringify(offSpec.body),
      );
      assert.match(offSpec.body.error, /local\.device\[0\]\.device_ip: /);

      assert.deepEqual(await status(d), before);
      assert.deepEqual((await (await fetch(`${d.url}/v1/kv/links`)).json()).links, []);
    });

    await t.step('D links to P through the role API', async () => {
      assert.deepEqual(await post(p, '/v1/role/prefill', { local: node(p), peers: [node(d)] }), { status: 200, body: { result: 'OK' } });
      assert.deepEqual(await post(d, '/v1/role/decode', { local: node(d), peers: [node(p)] }), { status: 200, body: { result: 'OK' } });
      const ready = await until(
        async () => {
          const s = await status(d);
          return s.service.roleStatus === 'RoleReady' && s.linkStatus.ok === 1 ? s : undefined;
        },
        30_000,
        () => 'D did not reach RoleReady with its link ok',
      );
      assert.deepEqual(
        ready.linkStatus.peers.map((r) => r.link),
        ['ok'],
      );
      const { links } = (await (await fetch(`${d.url}/v1/kv/links`)).json()) as {
        links: { remote_cluster_id: number; side: string; state: string }[];
      };
      assert.deepEqual(
        links.map((l) => [String(l.remote_cluster_id), l.side, l.state]),
        [[p.clusterId, 'client', 'linked']],
      );
    });

    await t.step("D pulls P's blocks over the link, byte for byte", async () => {
      assert.equal((await post(p, '/v1/kv/caches', { cache_id: 1, num_blocks: 8, block_bytes: BLOCK })).body.ret, 0);
      assert.equal((await post(d, '/v1/kv/caches', { cache_id: 2, num_blocks: 8, block_bytes: BLOCK })).body.ret, 0);
      const written = [0, 1, 2, 3, 4, 5, 6, 7];
      assert.equal((await post(p, '/v1/kv/write', { cache_id: 1, blocks: written, data: base64(pattern(written)) })).body.ret, 0);

      const src = [5, 1, 3];
      const dst = [0, 6, 2];
      const pulled = await post(d, '/v1/kv/pull', {
        remote_cluster_id: p.clusterId,
        remote_cache_id: 1,
        src_blocks: src,
        dst_cache_id: 2,
        dst_blocks: dst,
        timeout: 10_000,
      });
      assert.deepEqual(pulled, { status: 200, body: { ret: 0, ret_name: 'LLM_SUCCESS', bytes: 3 * BLOCK, blocks: 3 } });
      const read = await post(d, '/v1/kv/read', { cache_id: 2, blocks: dst });
      assert.deepEqual(new Uint8Array(Buffer.from(read.body.data, 'base64')), pattern(src));
      const untouched = await post(d, '/v1/kv/read', { cache_id: 2, blocks: [1, 3] });
      assert.ok(Buffer.from(untouched.body.data, 'base64').every((byte) => byte === 0));

      const missing = await post(d, '/v1/kv/pull', {
        remote_cluster_id: p.clusterId,
        remote_cache_id: 77,
        src_blocks: [0],
        dst_cache_id: 2,
        dst_blocks: [1],
        timeout: 10_000,
      });
      assert.equal(missing.body.ret_name, 'LLM_KV_CACHE_NOT_EXIST');
    });

    await t.step('both agents exit 0 on SIGTERM', async () => {
      assert.deepEqual(await Promise.all(agents.map((a) => a.process.stop('SIGTERM'))), [0, 0]);
    });
  } finally {
    await Promise.all(agents.map((a) => a.process.stop('SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  }
});
