/**
 * The role API between real `pdlink instance` processes on loopback: two prefill nodes P1, P2
 * and one decode node D, two devices each, on distinct addresses. The steps build on each other.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { clusterIdFor } from '../src/links/endpoint.ts';
import { eventually } from './fixtures/links/harness.ts';
import { cleanupNodes, listenSilently, nodeBody, startNode, startNodes, type Node, type Status } from './fixtures/role/harness.ts';

/** Generous per-test bound: processes start, links wait out timeouts, retries back off up to 5 s. */
const TEST_TIMEOUT_MS = 45_000;
const P1_IP = '127.0.7.2';
const P2_IP = '127.0.7.3';
const D_IP = '127.0.7.4';
const HUNG_IP = '127.0.7.9';
let p1: Node;
let p2: Node;
let d: Node;
const others: Node[] = [];

beforeAll(async () => {
  [p1, p2, d] = (await startNodes([P1_IP, P2_IP, D_IP], 2)) as [Node, Node, Node];
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all([p1, p2, d, ...others].filter((n) => n !== undefined).map((n) => n.child.kill('SIGKILL')));
  cleanupNodes();
}, TEST_TIMEOUT_MS);

/** Cluster ids of a node's devices, by the role API's rule. */
const idsOf = (n: Node) => [0, 1].map((i) => String(clusterIdFor(n.ip, n.base + i)));
const clientIds = async (n: Node) =>
  (await n.links())
    .filter((l) => l.side === 'client' && l.state === 'linked')
    .map((l) => String(l.remote_cluster_id))
    .sort();
const serverIds = async (n: Node) =>
  (await n.links())
    .filter((l) => l.side === 'server' && l.state === 'linked')
    .map((l) => String(l.remote_cluster_id))
    .sort();
const rows = (s: Status) => s.linkStatus.peers.map((p) => `${p.target}/${p.device}:${p.link}`);
const until = (n: Node, what: string, accept: (s: Status) => boolean, deadlineMs = 20_000) =>
  eventually(
    async () => {
      const s = await n.status();
      return accept(s) ? s : undefined;
    },
    `${n.ip}: ${what}`,
    deadlineMs,
  );
const ready = (role: string, links: number) => (s: Status) =>
  s.service.roleStatus === 'RoleReady' && s.service.currentRole === role && s.linkStatus.ok === links && s.linkStatus.desired === links;

describe('role API across processes', () => {
  test(
    'prefill P1, P2 and decode D: D reaches RoleReady with 4 links ok, each P with the 2 links from D',
    async () => {
      expect((await d.status()).service).toEqual({ roleStatus: 'RoleUnknown', currentRole: 'none', queuedPosts: 0 });
      expect(await p1.post('prefill', p1.body([d]))).toEqual({ status: 200, body: { result: 'OK' } });
      expect(await p2.post('prefill', p2.body([d]))).toEqual({ status: 200, body: { result: 'OK' } });
      expect(await d.post('decode', d.body([p1, p2]))).toEqual({ status: 200, body: { result: 'OK' } });
      const status = await until(d, 'decode ready with 4 links', ready('decode', 4));
      expect(rows(status)).toEqual([`${P1_IP}/0:ok`, `${P1_IP}/1:ok`, `${P2_IP}/0:ok`, `${P2_IP}/1:ok`]);
      expect(await clientIds(d)).toEqual([...idsOf(p1), ...idsOf(p2)].sort());
      await until(p1, 'prefill ready with D linked', ready('prefill', 2));
      await until(p2, 'prefill ready with D linked', ready('prefill', 2));
      expect(await serverIds(p1)).toEqual(idsOf(d).sort());
      expect(await serverIds(p2)).toEqual(idsOf(d).sort());
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "D again without P2: exactly P2's links are unlinked, on both sides",
    async () => {
      const p1Before = await p1.links();
      const dBefore = (await d.links()).filter((l) => idsOf(p1).includes(String(l.remote_cluster_id)));
      expect(await d.post('decode', d.body([p1]))).toEqual({ status: 200, body: { result: 'OK' } });
      await until(d, 'decode ready with 2 links', ready('decode', 2));
      expect(await clientIds(d)).toEqual(idsOf(p1).sort());
      await eventually(async () => ((await p2.links()).length === 0 ? true : undefined), 'P2 holds no link from D');
      // P1's links were left alone: the same entries, unchanged since before.
      expect(await p1.links()).toEqual(p1Before);
      expect((await d.links()).filter((l) => idsOf(p1).includes(String(l.remote_cluster_id)))).toEqual(dBefore);
      // P2 is told too, and has nothing left to wait for.
      expect((await p2.post('prefill', p2.body([]))).status).toBe(200);
      await until(p2, 'prefill ready with no peers', ready('prefill', 0));
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'kill -9 P1: D shows the failure; a replacement at the same addresses is relinked by the retry',
    async () => {
      expect(await p1.child.kill('SIGKILL')).toBe('SIGKILL');
      const failed = await until(d, 'both links to P1 failed', (s) => s.linkStatus.failed === 2);
      expect(failed.service.roleStatus).toBe('RoleSwitching');
      for (const row of failed.linkStatus.peers) expect(row.link).toMatch(/^failed: LLM_[A-Z_]+$/);
      expect(failed.service.lastError?.message).toContain(P1_IP);
      p1 = await startNode(P1_IP, 2, p1.base);
      await until(d, 'relinked to the replacement P1', ready('decode', 2));
      expect(await clientIds(d)).toEqual(idsOf(p1).sort());
      await eventually(async () => ((await serverIds(p1)).length === 2 ? true : undefined), 'the replacement P1 lists both links from D');
      // Before its first post the replacement accepted D; its status says it has no role yet.
      expect((await p1.status()).service.roleStatus).toBe('RoleUnknown');
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a prefill node told to drop D unlinks it server-side; D, still wanting it, shows it and relinks',
    async () => {
      expect((await p1.post('prefill', p1.body([]))).status).toBe(200);
      // D sees its links unlinked by the peer (not a lost peer) and retries them.
      await until(
        d,
        'links unlinked by P1',
        (s) => s.service.lastError?.message.includes('unlinked by the peer: LLM_NOT_YET_LINK') === true,
      );
      // P1 judged the links at its post only: clients linking after it are kept until the next post.
      await until(d, 'relinked after the peer unlinked', ready('decode', 2));
      expect((await p1.post('prefill', p1.body([d]))).status).toBe(200);
      await until(p1, 'prefill ready with D', ready('prefill', 2));
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'switch D to prefill: every link is gone, on both sides, and D serves as prefill',
    async () => {
      expect(await d.post('prefill', d.body([]))).toEqual({ status: 200, body: { result: 'OK' } });
      await until(d, 'prefill ready', ready('prefill', 0));
      expect(await d.links()).toEqual([]);
      await eventually(async () => ((await p1.links()).length === 0 ? true : undefined), 'P1 holds no link from D');
      await until(p1, 'P1 waits for D again', (s) => s.service.roleStatus === 'RoleSwitching' && s.linkStatus.linking === 2);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'the 200 is answered at once while the peer never answers; the link then times out and is retried',
    async () => {
      const logical = 40;
      const hung = await listenSilently(HUNG_IP, d.base + logical);
      try {
        const body = { local: nodeBody(D_IP, 2), peers: [nodeBody(HUNG_IP, 2, [logical, logical])] };
        expect(await d.post('decode', body)).toEqual({ status: 200, body: { result: 'OK' } });
        // Reconciliation has not finished when the 200 arrives: the links are still being made.
        const right = await d.status();
        expect(right.service.roleStatus).toBe('RoleSwitching');
        expect(right.linkStatus).toMatchObject({ ok: 0, failed: 0 });
        await until(d, 'linking to the hung peer', (s) => s.linkStatus.linking === 2 && s.service.currentRole === 'decode');
        const timedOut = await until(d, 'links to the hung peer timed out', (s) => s.linkStatus.failed === 2, 15_000);
        expect(rows(timedOut)).toEqual([`${HUNG_IP}/0:failed: LLM_TIMEOUT`, `${HUNG_IP}/1:failed: LLM_TIMEOUT`]);
        for (const row of timedOut.linkStatus.peers) {
          expect(row.failures).toBeGreaterThanOrEqual(1);
          expect(row.retryInMs).toBeGreaterThanOrEqual(0);
        }
      } finally {
        await hung.close();
      }
    },
    TEST_TIMEOUT_MS,
  );
});
