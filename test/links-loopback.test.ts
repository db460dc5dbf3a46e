/**
 * Link management between real `pdlink instance` processes on distinct loopback addresses:
 * a prefill-side process P (127.0.0.2) serving, a decode-side process D (127.0.0.3) linking.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { cleanupConfigs, closedPort, eventually, startBlackhole, startInstance, type InstanceChild } from './fixtures/links/harness.ts';

const P_IP = '127.0.0.2';
const D_IP = '127.0.0.3';
/** Generous per-test bound: these tests start processes and wait out link timeouts. */
const TEST_TIMEOUT_MS = 30_000;
let p: InstanceChild;
let d: InstanceChild;
const extra: InstanceChild[] = [];

beforeAll(async () => {
  [p, d] = await Promise.all([startInstance(P_IP), startInstance(D_IP)]);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all([p, d, ...extra].filter((c) => c !== undefined).map((c) => c.child.kill('SIGTERM')));
  cleanupConfigs();
}, TEST_TIMEOUT_MS);

const toP = () => ({ remote_cluster_id: p.clusterId.toString(), remote_ip_info: `${P_IP}:${p.linkPort}` });
const names = (body: { rets: { name: string }[] }) => body.rets.map((r) => r.name);
const serverLinkOf = (c: InstanceChild) => async (id: bigint) =>
  (await c.links()).find((l) => l.side === 'server' && String(l.remote_cluster_id) === id.toString());

describe('link and unlink between two processes', () => {
  test(
    'link → P lists the server end; link again → ALREADY_LINK; unlink → both ends gone; unlink again → NOT_YET_LINK',
    async () => {
      let res = await d.post('/v1/links/link', { clusters: [toP()], timeout: 3000 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ ret: 0, ret_name: 'LLM_SUCCESS' });
      expect((await d.links()).map((l) => [l.side, l.state, l.remote_ip_info])).toEqual([['client', 'linked', `${P_IP}:${p.linkPort}`]]);
      const server = await eventually(async () => {
        const link = await serverLinkOf(p)(d.clusterId);
        return link?.remote_ip_info?.startsWith(`${D_IP}:`) ? link : undefined;
      }, 'P lists the link from D with its address');
      expect(server).toMatchObject({ side: 'server', state: 'linked', code_name: 'LLM_SUCCESS' });

      res = await d.post('/v1/links/link', { clusters: [toP()] });
      expect(names(res.body)).toEqual(['LLM_ALREADY_LINK']);

      res = await d.post('/v1/links/unlink', { clusters: [toP()] });
      expect(names(res.body)).toEqual(['LLM_SUCCESS']);
      expect(await d.links()).toEqual([]);
      await eventually(async () => ((await serverLinkOf(p)(d.clusterId)) === undefined ? true : undefined), 'P drops the unlinked client');

      res = await d.post('/v1/links/unlink', { clusters: [toP()] });
      expect(names(res.body)).toEqual(['LLM_NOT_YET_LINK']);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a closed port → LINK_FAILED',
    async () => {
      const port = await closedPort(P_IP);
      const res = await d.post('/v1/links/link', {
        clusters: [{ remote_cluster_id: 4242, remote_ip_info: `${P_IP}:${port}` }],
        timeout: 2000,
      });
      expect(res.body.ret_name).toBe('LLM_FAILED');
      expect(names(res.body)).toEqual(['LLM_LINK_FAILED']);
      expect(
        names((await d.post('/v1/links/unlink', { clusters: [{ remote_cluster_id: 4242, remote_ip_info: `${P_IP}:${port}` }] })).body),
      ).toEqual(['LLM_NOT_YET_LINK']);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a peer that accepts and never answers → TIMEOUT within about the timeout',
    async () => {
      const hole = await startBlackhole(P_IP);
      try {
        const started = Date.now();
        const res = await d.post('/v1/links/link', {
          clusters: [{ remote_cluster_id: 4343, remote_ip_info: `${P_IP}:${hole.port}` }],
          timeout: 1000,
        });
        const elapsed = Date.now() - started;
        expect(names(res.body)).toEqual(['LLM_TIMEOUT']);
        expect(elapsed).toBeLessThan(1000 + 2000);
        await d.post('/v1/links/unlink', { clusters: [{ remote_cluster_id: 4343, remote_ip_info: `${P_IP}:${hole.port}` }], force: true });
        expect(await d.links()).toEqual([]);
      } finally {
        await hole.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  test(
    '17 clusters → CLUSTER_NUM_EXCEED_LIMIT',
    async () => {
      const clusters = Array.from({ length: 17 }, (_, i) => ({ remote_cluster_id: 5000 + i, remote_ip_info: `${P_IP}:${p.linkPort}` }));
      const res = await d.post('/v1/links/link', { clusters });
      expect(res.status).toBe(200);
      expect(res.body.ret_name).toBe('LLM_CLUSTER_NUM_EXCEED_LIMIT');
      expect((await d.links()).filter((l) => Number(l.remote_cluster_id) >= 5000 && Number(l.remote_cluster_id) < 5017)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a mixed batch returns per-cluster codes in input order',
    async () => {
      const port = await closedPort(P_IP);
      const res = await d.post('/v1/links/link', {
        clusters: [
          { remote_cluster_id: 6001, remote_ip_info: `${P_IP}:${port}` },
          toP(),
          toP(),
          { remote_cluster_id: 6002, remote_ip_info: `${P_IP}:${port}` },
        ],
        timeout: 2000,
      });
      expect(res.body.rets.map((r: { remote_cluster_id: unknown; name: string }) => [String(r.remote_cluster_id), r.name])).toEqual([
        ['6001', 'LLM_LINK_FAILED'],
        [p.clusterId.toString(), 'LLM_SUCCESS'],
        [p.clusterId.toString(), 'LLM_PROCESSING_LINK'],
        ['6002', 'LLM_LINK_FAILED'],
      ]);
      expect(names((await d.post('/v1/links/unlink', { clusters: [toP()] })).body)).toEqual(['LLM_SUCCESS']);
      // Failed attempts stay listed with their code until unlinked (or reconciled away).
      expect((await d.links()).map((l) => [String(l.remote_cluster_id), l.state, l.code_name])).toEqual([
        ['6001', 'failed', 'LLM_LINK_FAILED'],
        ['6002', 'failed', 'LLM_LINK_FAILED'],
      ]);
      const cleared = await d.post('/v1/links/unlink', {
        clusters: [
          { remote_cluster_id: 6001, remote_ip_info: `${P_IP}:${port}` },
          { remote_cluster_id: 6002, remote_ip_info: `${P_IP}:${port}` },
        ],
      });
      expect(names(cleared.body)).toEqual(['LLM_NOT_YET_LINK', 'LLM_NOT_YET_LINK']);
      expect(await d.links()).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "force unlink on D leaves P's end until P force-unlinks",
    async () => {
      expect((await d.post('/v1/links/link', { clusters: [toP()] })).body.ret_name).toBe('LLM_SUCCESS');
      await eventually(() => serverLinkOf(p)(d.clusterId), 'P lists the link from D');
      expect(names((await d.post('/v1/links/unlink', { clusters: [toP()], force: true })).body)).toEqual(['LLM_SUCCESS']);
      expect(await d.links()).toEqual([]);
      expect(await serverLinkOf(p)(d.clusterId)).toMatchObject({ state: 'linked' });
      const fromP = { remote_cluster_id: d.clusterId.toString(), remote_ip_info: `${D_IP}:${d.linkPort}` };
      expect(names((await p.post('/v1/links/unlink', { clusters: [fromP], force: true })).body)).toEqual(['LLM_SUCCESS']);
      expect(await serverLinkOf(p)(d.clusterId)).toBeUndefined();
      expect((await d.post('/v1/links/link', { clusters: [toP()] })).body.ret_name).toBe('LLM_SUCCESS');
      expect(names((await d.post('/v1/links/unlink', { clusters: [toP()] })).body)).toEqual(['LLM_SUCCESS']);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'kill -9 D: P reports the peer lost and cleans up; a new D with the same cluster id links again',
    async () => {
      const doomed = await startInstance('127.0.0.4');
      extra.push(doomed);
      expect((await doomed.post('/v1/links/link', { clusters: [toP()] })).body.ret_name).toBe('LLM_SUCCESS');
      await eventually(() => serverLinkOf(p)(doomed.clusterId), 'P lists the link from the doomed D');
      expect(await doomed.child.kill('SIGKILL')).toBe('SIGKILL');
      await eventually(async () => ((await serverLinkOf(p)(doomed.clusterId)) === undefined ? true : undefined), 'P drops the dead peer');
      const reborn = await startInstance('127.0.0.4', { linkPort: doomed.linkPort, clusterId: doomed.clusterId });
      extra.push(reborn);
      expect(reborn.clusterId).toBe(doomed.clusterId);
      expect((await reborn.post('/v1/links/link', { clusters: [toP()] })).body.ret_name).toBe('LLM_SUCCESS');
      await eventually(() => serverLinkOf(p)(reborn.clusterId), 'P lists the link from the new D');
    },
    TEST_TIMEOUT_MS,
  );
});
