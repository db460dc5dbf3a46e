/**
 * KV transfers between real `pdlink instance` processes on distinct loopback addresses, driven over
 * HTTP: P (127.0.0.2) writes known bytes into its blocks; D over shared memory (127.0.0.3) and D
 * over TCP (127.0.0.4, same-host path off) pull and push arbitrary, non-contiguous block lists.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { cleanupConfigs, link, patternOf, prepareCache, readBack, startAgent, type Agent } from './fixtures/transfers/harness.ts';

const BLOCK = 16 * 1024;
const NBLOCKS = 256;
const P_CACHE = 1;
const D_CACHE = 2;
/** Generous per-test bound: these tests start processes on a shared, busy machine. */
const TEST_TIMEOUT_MS = 60_000;

let p: Agent;
let shm: Agent;
let tcp: Agent;

beforeAll(async () => {
  [p, shm, tcp] = await Promise.all([
    startAgent('127.0.0.2', { sameHost: true }),
    startAgent('127.0.0.3', { sameHost: true }),
    startAgent('127.0.0.4', { sameHost: false }),
  ]);
  await prepareCache(p, P_CACHE, NBLOCKS, BLOCK, 5);
  for (const d of [shm, tcp]) {
    await prepareCache(d, D_CACHE, NBLOCKS, BLOCK);
    await link(d, p);
  }
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all([p, shm, tcp].filter((a) => a !== undefined).map((a) => a.child.kill('SIGTERM')));
  cleanupConfigs();
}, TEST_TIMEOUT_MS);

/** A deterministic scramble of n distinct blocks out of NBLOCKS, with a repeat or two in the source. */
function scrambled(n: number, seed: number): { src: number[]; dst: number[] } {
  const order = Array.from({ length: NBLOCKS }, (_, i) => i);
  let x = seed;
  for (let i = order.length - 1; i > 0; i--) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    const j = x % (i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const src = order.slice(0, n);
  src[n - 1] = src[0]!; // the same source block twice
  const dst = order.slice(NBLOCKS - n).reverse();
  return { src, dst };
}

const pullBody = (src: readonly number[], dst: readonly number[], extra: object = {}) => ({
  remote_cluster_id: p.clusterId.toString(),
  remote_cache_id: P_CACHE,
  src_blocks: src,
  dst_cache_id: D_CACHE,
  dst_blocks: dst,
  timeout: 10_000,
  ...extra,
});

describe.each([
  ['shared memory', () => shm, true],
  ['TCP', () => tcp, false],
])('D pulls from P over %s', (_, agent, sameHost) => {
  test('the runtime reports the path the link takes', async () => {
    const { links } = await agent().get('/v1/kv/links');
    expect(links).toEqual([
      {
        endpoint: '0',
        remote_cluster_id: Number(p.clusterId),
        side: 'client',
        state: 'linked',
        same_host: sameHost,
        transfers_in_flight: 0,
      },
    ]);
  });

  test('an arbitrary non-contiguous list: every destination block holds its source bytes, the rest stay zero', async () => {
    const d = agent();
    const { src, dst } = scrambled(100, sameHost ? 7 : 11);
    expect(await d.post('/v1/kv/pull', pullBody(src, dst))).toEqual({ ret: 0, ret_name: 'LLM_SUCCESS', bytes: 100 * BLOCK, blocks: 100 });
    expect((await readBack(d, D_CACHE, dst)).equals(patternOf(5, src, BLOCK))).toBe(true);
    const untouched = Array.from({ length: NBLOCKS }, (_, b) => b).filter((b) => !dst.includes(b));
    expect((await readBack(d, D_CACHE, untouched)).every((byte) => byte === 0)).toBe(true);
    // Clean up for the next test: zeros over what we pulled.
    expect(
      (await d.post('/v1/kv/write', { cache_id: D_CACHE, blocks: dst, data: Buffer.alloc(dst.length * BLOCK).toString('base64') })).ret,
    ).toBe(0);
  });

  test("a push writes D's blocks into P", async () => {
    const d = agent();
    const blocks = [3, 200, 17];
    expect((await d.post('/v1/kv/write', { cache_id: D_CACHE, blocks, data: patternOf(9, blocks, BLOCK).toString('base64') })).ret).toBe(0);
    const target = sameHost ? [250, 251, 252] : [253, 254, 255];
    const res = await d.post('/v1/kv/push', {
      remote_cluster_id: p.clusterId.toString(),
      src_cache_id: D_CACHE,
      src_blocks: blocks,
      remote_cache_id: P_CACHE,
      dst_blocks: target,
      timeout: 10_000,
    });
    expect(res).toEqual({ ret: 0, ret_name: 'LLM_SUCCESS', bytes: 3 * BLOCK, blocks: 3 });
    expect((await readBack(p, P_CACHE, target)).equals(patternOf(9, blocks, BLOCK))).toBe(true);
    // Restore P's pattern on those blocks.
    expect(
      (await p.post('/v1/kv/write', { cache_id: P_CACHE, blocks: target, data: patternOf(5, target, BLOCK).toString('base64') })).ret,
    ).toBe(0);
  });

  test('a block or cache P does not hold → KV_CACHE_NOT_EXIST, and nothing lands', async () => {
    const d = agent();
    const beyond = await d.post('/v1/kv/pull', pullBody([0, NBLOCKS], [40, 41]));
    expect(beyond).toMatchObject({ ret: 0x5010b002, ret_name: 'LLM_KV_CACHE_NOT_EXIST', bytes: 0 });
    expect(await d.post('/v1/kv/pull', pullBody([0], [40], { remote_cache_id: 77 }))).toMatchObject({
      ret_name: 'LLM_KV_CACHE_NOT_EXIST',
      bytes: 0,
    });
    expect(await d.post('/v1/kv/pull', pullBody([0], [NBLOCKS]))).toMatchObject({ ret_name: 'LLM_KV_CACHE_NOT_EXIST', bytes: 0 });
    expect((await readBack(d, D_CACHE, [40, 41])).every((byte) => byte === 0)).toBe(true);
    // The link is still fine afterwards.
    expect(await d.post('/v1/kv/pull', pullBody([1], [40]))).toMatchObject({ ret: 0 });
    expect((await readBack(d, D_CACHE, [40])).equals(patternOf(5, [1], BLOCK))).toBe(true);
    await d.post('/v1/kv/write', { cache_id: D_CACHE, blocks: [40], data: Buffer.alloc(BLOCK).toString('base64') });
  });

  test('a cluster D has no link to → NOT_YET_LINK', async () => {
    const res = await agent().post('/v1/kv/pull', pullBody([0], [0], { remote_cluster_id: '123456789' }));
    expect(res).toMatchObject({ ret: 0x5010b007, ret_name: 'LLM_NOT_YET_LINK', bytes: 0, blocks: 0 });
  });
});

test(
  'P (the link server) can pull from D over the same link',
  async () => {
    // Either side of a link may pull: here P reads D's blocks over the TCP link D made.
    const blocks = [5, 6];
    expect((await tcp.post('/v1/kv/write', { cache_id: D_CACHE, blocks, data: patternOf(3, blocks, BLOCK).toString('base64') })).ret).toBe(
      0,
    );
    await prepareCache(p, 9, 4, BLOCK);
    const res = await p.post('/v1/kv/pull', {
      remote_cluster_id: tcp.clusterId.toString(),
      remote_cache_id: D_CACHE,
      src_blocks: blocks,
      dst_cache_id: 9,
      dst_blocks: [3, 0],
      timeout: 10_000,
    });
    expect(res).toMatchObject({ ret: 0, bytes: 2 * BLOCK });
    expect((await readBack(p, 9, [3, 0])).equals(patternOf(3, blocks, BLOCK))).toBe(true);
  },
  TEST_TIMEOUT_MS,
);
