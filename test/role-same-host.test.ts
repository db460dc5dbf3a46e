/**
 * Prefill and decode agents on one server: two `pdlink instance` processes on the same loopback
 * address, one device each, told apart only by their logical ids (so by link port). The role API
 * must see two nodes, not "the local node itself", and link them for real.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { clusterIdFor } from '../src/links/endpoint.ts';
import { eventually } from './fixtures/links/harness.ts';
import { cleanupNodes, nodeBody, randomBase, startNode, type Node, type Status } from './fixtures/role/harness.ts';

const TEST_TIMEOUT_MS = 45_000;
const IP = '127.0.8.2';
let p: Node;
let d: Node;

beforeAll(async () => {
  for (let attempt = 0; ; attempt++) {
    const base = randomBase();
    try {
      p = await startNode(IP, 1, base, [0]);
      d = await startNode(IP, 1, base, [1]);
      return;
    } catch (err) {
      await p?.child.kill('SIGKILL');
      if (attempt >= 4 || !/cannot open link endpoint|in use/i.test(String(err))) throw err;
    }
  }
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all([p, d].filter((n) => n !== undefined).map((n) => n.child.kill('SIGKILL')));
  cleanupNodes();
}, TEST_TIMEOUT_MS);

const readyWithOneLink = (role: string) => (s: Status) =>
  s.service.roleStatus === 'RoleReady' && s.service.currentRole === role && s.linkStatus.desired === 1 && s.linkStatus.ok === 1;

function until(n: Node, role: string): Promise<Status> {
  return eventually(
    async () => {
      const s = await n.status();
      return readyWithOneLink(role)(s) ? s : undefined;
    },
    `${role} agent on ${IP}: RoleReady with its link`,
    20_000,
  );
}

test(
  'same server_ip and device_ip, logical ids 0 and 1: both posts are 200 and the pair links',
  async () => {
    expect(await p.post('prefill', p.body([d]))).toEqual({ status: 200, body: { result: 'OK' } });
    expect(await d.post('decode', d.body([p]))).toEqual({ status: 200, body: { result: 'OK' } });
    const status = await until(d, 'decode');
    expect(status.linkStatus.peers.map((r) => [r.target, r.localDevice, r.peerDevice, r.remote, r.link])).toEqual([
      [IP, 1, 0, `${IP}:${p.base}`, 'ok'],
    ]);
    await until(p, 'prefill');
    const linked = (await d.links()).filter((l) => l.side === 'client' && l.state === 'linked');
    expect(linked.map((l) => String(l.remote_cluster_id))).toEqual([String(clusterIdFor(IP, p.base))]);
  },
  TEST_TIMEOUT_MS,
);

test(
  'the same decode post with the peer unnamed (no server_ip) and its id spelled "00": 200, the same link stays up',
  async () => {
    const body = { local: nodeBody(IP, 1, [1]), peers: [{ device: [{ device_ip: IP, device_logical_id: '00' }] }] };
    expect(await d.post('decode', body)).toEqual({ status: 200, body: { result: 'OK' } });
    const status = await until(d, 'decode');
    expect(status.linkStatus.peers.map((r) => [r.target, r.peerDevice, r.remote, r.link])).toEqual([[null, 0, `${IP}:${p.base}`, 'ok']]);
  },
  TEST_TIMEOUT_MS,
);
