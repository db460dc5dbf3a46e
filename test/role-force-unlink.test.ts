/**
 * The decode role after a forced unlink on D alone, between real `pdlink instance` processes: P
 * keeps its end and refuses D's relinks with LLM_ALREADY_LINK, which D's status must show as a
 * failure of that link (never `ok`, never RoleReady) and retry with its backoff; once P releases
 * its end, the retry relinks and a pull carries real bytes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { clusterIdFor } from '../src/links/endpoint.ts';
import { eventually } from './fixtures/links/harness.ts';
import { cleanupNodes, startNodes, type Node, type Status } from './fixtures/role/harness.ts';
import { patternOf } from './fixtures/transfers/harness.ts';

/** Generous per-test bound: processes start, and retries back off on a shared, busy machine. */
const TEST_TIMEOUT_MS = 60_000;
const P_IP = '127.0.11.12';
const D_IP = '127.0.11.13';
const BLOCK = 4096;
const NBLOCKS = 8;
const P_CACHE = 1;
const D_CACHE = 2;
let p: Node;
let d: Node;

beforeAll(async () => {
  [p, d] = (await startNodes([P_IP, D_IP], 1)) as [Node, Node];
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all([p, d].filter((n) => n !== undefined).map((n) => n.child.kill('SIGTERM')));
  cleanupNodes();
}, TEST_TIMEOUT_MS);

async function call(n: Node, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${n.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return res.json();
}

const until = (n: Node, what: string, accept: (s: Status) => boolean) =>
  eventually(
    async () => {
      const s = await n.status();
      return accept(s) ? s : undefined;
    },
    `${n.ip}: ${what}`,
    20_000,
  );
const ready = (s: Status) => s.service.roleStatus === 'RoleReady' && s.linkStatus.ok === 1 && s.linkStatus.desired === 1;
const blocks = [1, 4, 6];

const pull = () =>
  call(d, '/v1/kv/pull', {
    remote_cluster_id: clusterIdFor(P_IP, p.base).toString(),
    remote_cache_id: P_CACHE,
    src_blocks: blocks,
    dst_cache_id: D_CACHE,
    dst_blocks: blocks,
    timeout: 10_000,
  });

/** Zeros D's blocks, pulls them from P and checks every byte against what P wrote. */
async function pullRealBytes(): Promise<void> {
  expect(
    (await call(d, '/v1/kv/write', { cache_id: D_CACHE, blocks, data: Buffer.alloc(blocks.length * BLOCK).toString('base64') })).ret,
  ).toBe(0);
  expect(await pull()).toEqual({ ret: 0, ret_name: 'LLM_SUCCESS', bytes: blocks.length * BLOCK, blocks: blocks.length });
  const back = await call(d, '/v1/kv/read', { cache_id: D_CACHE, blocks });
  expect(Buffer.from(back.data, 'base64').equals(patternOf(7, blocks, BLOCK))).toBe(true);
}

describe('decode role and a forced unlink on D only', () => {
  test(
    "P's refusal shows as failed: LLM_ALREADY_LINK and is retried; once P releases, the retry relinks and a pull works",
    async () => {
      expect(await p.post('prefill', p.body([d]))).toEqual({ status: 200, body: { result: 'OK' } });
      expect(await d.post('decode', d.body([p]))).toEqual({ status: 200, body: { result: 'OK' } });
      await until(d, 'decode ready', ready);
      expect((await call(p, '/v1/kv/caches', { cache_id: P_CACHE, num_blocks: NBLOCKS, block_bytes: BLOCK })).ret).toBe(0);
      const all = Array.from({ length: NBLOCKS }, (_, b) => b);
      expect(
        (await call(p, '/v1/kv/write', { cache_id: P_CACHE, blocks: all, data: patternOf(7, all, BLOCK).toString('base64') })).ret,
      ).toBe(0);
      expect((await call(d, '/v1/kv/caches', { cache_id: D_CACHE, num_blocks: NBLOCKS, block_bytes: BLOCK })).ret).toBe(0);
      await pullRealBytes();

      const toP = { remote_cluster_id: clusterIdFor(P_IP, p.base).toString(), remote_ip_info: `${P_IP}:${p.base}` };
      const forced = await call(d, '/v1/links/unlink', { clusters: [toP], force: true });
      expect(forced.rets.map((r: { name: string }) => r.name)).toEqual(['LLM_SUCCESS']);

      // Retried and refused at least twice: the refusal is a failure that stays one, never an up link.
      for (const failures of [2, 3]) {
        const refused = await until(
          d,
          `refused ${failures - 1} time(s)`,
          (s) => s.linkStatus.peers[0]!.link === 'failed: LLM_ALREADY_LINK' && s.linkStatus.peers[0]!.failures >= failures,
        );
        expect(refused.service.roleStatus).toBe('RoleSwitching');
        expect(refused.linkStatus).toMatchObject({ desired: 1, ok: 0, failed: 1 });
        expect(refused.service.lastError?.message).toContain('LLM_ALREADY_LINK');
        expect((await d.links()).filter((l) => l.state === 'linked')).toEqual([]);
        expect((await pull()).ret_name).toBe('LLM_NOT_YET_LINK');
      }

      // P releases its end; D's next retry links.
      const toD = { remote_cluster_id: clusterIdFor(D_IP, d.base).toString(), remote_ip_info: `${D_IP}:${d.base}` };
      const released = await call(p, '/v1/links/unlink', { clusters: [toD], force: true });
      expect(released.rets.map((r: { name: string }) => r.name)).toEqual(['LLM_SUCCESS']);
      const back = await until(d, 'relinked by the retry', ready);
      expect(back.linkStatus.peers[0]).toMatchObject({ link: 'ok', failures: 0 });
      await pullRealBytes();
    },
    TEST_TIMEOUT_MS,
  );
});
