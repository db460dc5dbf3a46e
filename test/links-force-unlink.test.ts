/**
 * Forced unlink between two real `pdlink instance` processes, P (the link's server) and D (its
 * client), in both orders. A forced unlink clears only the caller's end (seed 003, 异常处理), so
 * until both ends have called it the peer refuses a new link; throughout, D's link table must say
 * what D's runtime holds, and once both ends are clear a relink succeeds and carries real bytes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { cleanupConfigs, patternOf, prepareCache, readBack, startAgent, until, type Agent } from './fixtures/transfers/harness.ts';

const P_IP = '127.0.11.2';
const D_IP = '127.0.11.3';
const BLOCK = 4096;
const NBLOCKS = 16;
const P_CACHE = 1;
const D_CACHE = 2;
/** Generous per-test bound: processes start and link on a shared, busy machine. */
const TEST_TIMEOUT_MS = 45_000;

let p: Agent;
let d: Agent;

beforeAll(async () => {
  [p, d] = await Promise.all([startAgent(P_IP, { sameHost: true }), startAgent(D_IP, { sameHost: true })]);
  await prepareCache(p, P_CACHE, NBLOCKS, BLOCK, 3);
  await prepareCache(d, D_CACHE, NBLOCKS, BLOCK);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all([p, d].filter((a) => a !== undefined).map((a) => a.child.kill('SIGTERM')));
  cleanupConfigs();
}, TEST_TIMEOUT_MS);

interface Row {
  remote_cluster_id: number | string;
  side: string;
  state: string;
  code_name?: string;
}

const toP = () => ({ remote_cluster_id: p.clusterId.toString(), remote_ip_info: `${P_IP}:${p.linkPort}`, local_ip_info: D_IP });
const toD = () => ({ remote_cluster_id: d.clusterId.toString(), remote_ip_info: `${D_IP}:${d.linkPort}` });
const names = (body: { rets: { name: string }[] }) => body.rets.map((r) => r.name);
const linkD = async () => names(await d.post('/v1/links/link', { clusters: [toP()], timeout: 3000 }));
const forceUnlink = async (agent: Agent, cluster: object) =>
  names(await agent.post('/v1/links/unlink', { clusters: [cluster], force: true }));
/** What the link manager lists, and what the runtime holds, on one agent. */
const table = async (agent: Agent) => ((await agent.get('/v1/links')) as { links: Row[] }).links;
const runtime = async (agent: Agent) => ((await agent.get('/v1/kv/links')) as { links: Row[] }).links;
const linkedIn = (rows: readonly Row[]) => rows.filter((l) => l.state === 'linked').map((l) => `${l.side}:${l.remote_cluster_id}`);
/** The manager's linked entries and the runtime's links, side by side: they must be the same. */
async function agreement(agent: Agent): Promise<{ table: string[]; runtime: string[] }> {
  return { table: linkedIn(await table(agent)), runtime: linkedIn(await runtime(agent)) };
}
const serverEndOnP = async () =>
  (await table(p)).find((l) => l.side === 'server' && String(l.remote_cluster_id) === d.clusterId.toString());

const pull = (blocks: readonly number[]) =>
  d.post('/v1/kv/pull', {
    remote_cluster_id: p.clusterId.toString(),
    remote_cache_id: P_CACHE,
    src_blocks: blocks,
    dst_cache_id: D_CACHE,
    dst_blocks: blocks,
    timeout: 10_000,
  });

/** Zeros D's blocks, pulls them from P and checks every byte against the pattern P wrote. */
async function pullRealBytes(blocks: readonly number[]): Promise<void> {
  expect(
    (await d.post('/v1/kv/write', { cache_id: D_CACHE, blocks, data: Buffer.alloc(blocks.length * BLOCK).toString('base64') })).ret,
  ).toBe(0);
  expect(await pull(blocks)).toEqual({ ret: 0, ret_name: 'LLM_SUCCESS', bytes: blocks.length * BLOCK, blocks: blocks.length });
  expect((await readBack(d, D_CACHE, blocks)).equals(patternOf(3, blocks, BLOCK))).toBe(true);
}

/** Links D to P, waits for P to list the server end, and checks a pull. */
async function linkedPair(): Promise<void> {
  expect(await linkD()).toEqual(['LLM_SUCCESS']);
  await until(async () => ((await serverEndOnP())?.state === 'linked' ? true : undefined), 'P lists the link from D');
  await pullRealBytes([0, 5]);
}

/** Unlinks normally so the next test starts from nothing on either side. */
async function tidy(): Promise<void> {
  expect(names(await d.post('/v1/links/unlink', { clusters: [toP()] }))).toEqual(['LLM_SUCCESS']);
  await until(async () => ((await serverEndOnP()) === undefined ? true : undefined), 'P drops the unlinked client');
  expect(await table(d)).toEqual([]);
}

describe('forced unlink on both ends', () => {
  test(
    "D first: P refuses D's relink, D lists no link it does not hold; after P's forced unlink the relink pulls real bytes",
    async () => {
      await linkedPair();
      const pId = `client:${p.clusterId}`;
      expect(await agreement(d)).toEqual({ table: [pId], runtime: [pId] });

      expect(await forceUnlink(d, toP())).toEqual(['LLM_SUCCESS']);
      expect(await agreement(d)).toEqual({ table: [], runtime: [] });
      expect(await serverEndOnP()).toMatchObject({ state: 'linked' });

      // P still holds its end and refuses: a failure of this link, not a link.
      expect(await linkD()).toEqual(['LLM_ALREADY_LINK']);
      expect(await agreement(d)).toEqual({ table: [], runtime: [] });
      expect((await table(d)).map((l) => [l.side, l.state, l.code_name])).toEqual([['client', 'failed', 'LLM_ALREADY_LINK']]);
      expect((await pull([1])).ret_name).toBe('LLM_NOT_YET_LINK');
      // Asked again, D asks P again (P still refuses) rather than answering from its own table.
      expect(await linkD()).toEqual(['LLM_ALREADY_LINK']);
      expect(await agreement(d)).toEqual({ table: [], runtime: [] });

      expect(await forceUnlink(p, toD())).toEqual(['LLM_SUCCESS']);
      expect(await serverEndOnP()).toBeUndefined();

      // Both ends are clear: D links without unlinking anything first.
      expect(await linkD()).toEqual(['LLM_SUCCESS']);
      expect(await agreement(d)).toEqual({ table: [pId], runtime: [pId] });
      await pullRealBytes([2, 9, 15]);
      await tidy();
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "P first: D's forced unlink of the link it lost succeeds; the relink pulls real bytes",
    async () => {
      await linkedPair();
      expect(await forceUnlink(p, toD())).toEqual(['LLM_SUCCESS']);
      expect(await serverEndOnP()).toBeUndefined();

      // D's runtime dropped its end with P's connection and D lists it failed; D's forced unlink,
      // the second of the two the seed asks for, clears it and succeeds as a whole.
      await until(async () => ((await table(d))[0]?.state === 'failed' ? true : undefined), 'D lists the lost link failed');
      expect(await agreement(d)).toEqual({ table: [], runtime: [] });
      const forced = await d.post('/v1/links/unlink', { clusters: [toP()], force: true });
      expect([forced.ret_name, ...names(forced)]).toEqual(['LLM_SUCCESS', 'LLM_SUCCESS']);
      expect(await table(d)).toEqual([]);
      expect(await agreement(d)).toEqual({ table: [], runtime: [] });

      expect(await linkD()).toEqual(['LLM_SUCCESS']);
      const pId = `client:${p.clusterId}`;
      expect(await agreement(d)).toEqual({ table: [pId], runtime: [pId] });
      await until(async () => ((await serverEndOnP())?.state === 'linked' ? true : undefined), 'P lists the new link from D');
      await pullRealBytes([3, 4, 12]);
      expect(await agreement(d)).toEqual({ table: [pId], runtime: [pId] });
      await tidy();
    },
    TEST_TIMEOUT_MS,
  );
});
