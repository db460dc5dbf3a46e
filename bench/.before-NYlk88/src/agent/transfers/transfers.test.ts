/**
 * The transfer API of two agents in one process over the real reference runtime: P (prefill side,
 * 127.0.0.2) holds known bytes, D (127.0.0.3) links to P and pulls/pushes through its pool.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { LLM_STATUS as S } from '../../core/llm-status.ts';
import { createRegistry } from '../../core/metrics.ts';
import { openAgent, type Agent } from '../agent.ts';

const BLOCK = 4096;
const NBLOCKS = 64;

/** Starts an agent on a random high port of `ip`, retrying when the port is taken. */
async function agentOn(ip: string, clusterId: bigint, sameHostFastpath: boolean, chunkBytes?: number): Promise<Agent> {
  for (let attempt = 0; ; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 30000);
    try {
      return await openAgent({
        devices: [{ endpoint: '0', ip, port, clusterId }],
        threads: 1,
        metrics: createRegistry(),
        transfers: { threads: 1, sameHostFastpath, sliceMs: 0, ...(chunkBytes === undefined ? {} : { chunkBytes }) },
      });
    } catch (err) {
      if (attempt > 5 || !/cannot open link endpoint/.test(String(err))) throw err;
    }
  }
}

function pattern(seed: number, b: number): Uint8Array {
  return Uint8Array.from({ length: BLOCK }, (_, i) => (seed * 131 + b * 31 + i * 7) & 0xff);
}

function blocksOf(seed: number, list: readonly number[]): Uint8Array {
  const out = new Uint8Array(list.length * BLOCK);
  list.forEach((b, i) => out.set(pattern(seed, b), i * BLOCK));
  return out;
}

const all = Array.from({ length: NBLOCKS }, (_, b) => b);
let p: Agent;
const ds: Agent[] = [];

beforeAll(async () => {
  p = await agentOn('127.0.0.2', 1n, true);
  expect(await p.transfers.registerCache('0', { cacheId: 1n, numBlocks: NBLOCKS, blockBytes: BLOCK })).toEqual({
    ret: 0,
    retName: 'LLM_SUCCESS',
  });
  expect((await p.transfers.writeBlocks(undefined, 1n, all, blocksOf(5, all))).ret).toBe(0);
});

afterAll(async () => {
  await Promise.all([p, ...ds].map((a) => a?.close()));
});

describe.each([
  ['shared memory', true, 2n],
  ['TCP', false, 3n],
])('D pulls and pushes over %s', (_, sameHost, dId) => {
  let d: Agent;

  beforeAll(async () => {
    // Three blocks per runtime call and a slice per call: the chunk and slice loops both run.
    d = await agentOn(sameHost ? '127.0.0.3' : '127.0.0.4', dId, sameHost, 3 * BLOCK);
    ds.push(d);
    expect((await d.transfers.registerCache('0', { cacheId: 2n, numBlocks: NBLOCKS, blockBytes: BLOCK })).ret).toBe(0);
    const port = p.devices[0]!.port;
    expect((await d.linkManager.linkClusters([{ remoteClusterId: 1n, remote: { ip: '127.0.0.2', port } }])).ret).toBe(0);
    expect((await d.transfers.links()).map((l) => [l.endpoint, l.remoteClusterId, l.sameHost])).toEqual([['0', 1n, sameHost]]);
  });

  test('a non-contiguous list lands where it should, and nothing else changes', async () => {
    const src = [63, 0, 17, 17, 40, 41, 2, 9];
    const dst = [1, 2, 3, 60, 10, 30, 20, 11];
    const result = await d.transfers.pullBlocks({
      remoteClusterId: 1n,
      remoteCacheId: 1n,
      srcBlocks: src,
      dstCacheId: 2n,
      dstBlocks: new Uint32Array(dst),
      timeoutMs: 5000,
    });
    expect(result).toEqual({ ret: 0, retName: 'LLM_SUCCESS', bytes: src.length * BLOCK, blocks: src.length, aborted: false });
    const read = await d.transfers.readBlocks('0', 2n, [...dst, 4]);
    expect(read.ret).toBe(0);
    expect(read.data!.subarray(0, dst.length * BLOCK)).toEqual(blocksOf(5, src));
    expect(read.data!.subarray(dst.length * BLOCK).every((x) => x === 0)).toBe(true);
    expect(d.transfers.active()).toEqual([]);
  });

  test('a push writes our blocks into the peer', async () => {
    expect((await d.transfers.writeBlocks('0', 2n, [50, 51], blocksOf(9, [0, 1]))).ret).toBe(0);
    const result = await d.transfers.pushBlocks({
      remoteClusterId: 1n,
      srcCacheId: 2n,
      srcBlocks: [50, 51],
      remoteCacheId: 1n,
      dstBlocks: [62, 61],
      timeoutMs: 5000,
    });
    expect(result).toMatchObject({ ret: 0, bytes: 2 * BLOCK, blocks: 2 });
    const back = await p.transfers.readBlocks('0', 1n, [62, 61]);
    expect(back.data).toEqual(blocksOf(9, [0, 1]));
    // Put P's pattern back for the other path.
    expect((await p.transfers.writeBlocks('0', 1n, [62, 61], blocksOf(5, [62, 61]))).ret).toBe(0);
  });

  test('runtime refusals come back as codes: unknown block or cache, no link', async () => {
    const pull = (over: object) =>
      d.transfers.pullBlocks({
        remoteClusterId: 1n,
        remoteCacheId: 1n,
        srcBlocks: [0, 1],
        dstCacheId: 2n,
        dstBlocks: [0, 1],
        timeoutMs: 2000,
        ...over,
      });
    expect(await pull({ srcBlocks: [0, NBLOCKS] })).toMatchObject({
      ret: S.LLM_KV_CACHE_NOT_EXIST,
      retName: 'LLM_KV_CACHE_NOT_EXIST',
      bytes: 0,
    });
    expect(await pull({ remoteCacheId: 99n })).toMatchObject({ retName: 'LLM_KV_CACHE_NOT_EXIST' });
    expect(await pull({ dstCacheId: 98n })).toMatchObject({ retName: 'LLM_KV_CACHE_NOT_EXIST' });
    expect(await pull({ dstBlocks: [0, NBLOCKS] })).toMatchObject({ retName: 'LLM_KV_CACHE_NOT_EXIST' });
    expect(await pull({ remoteClusterId: 77n })).toMatchObject({ retName: 'LLM_NOT_YET_LINK', bytes: 0 });
    // A failure part way reports what moved before it: three blocks per call, the bad one in the third call.
    const partial = await pull({ srcBlocks: [0, 1, 2, 3, 4, 5, 6, NBLOCKS], dstBlocks: [0, 1, 2, 3, 4, 5, 6, 7] });
    expect(partial).toMatchObject({ retName: 'LLM_KV_CACHE_NOT_EXIST', blocks: 6, bytes: 6 * BLOCK });
  });

  test('bad arguments are PARAM_INVALID naming the field, before any worker is involved', async () => {
    const pull = (over: object) =>
      d.transfers.pullBlocks({ remoteClusterId: 1n, remoteCacheId: 1n, srcBlocks: [0, 1], dstCacheId: 2n, dstBlocks: [0, 1], ...over });
    const cases: [object, string][] = [
      [{ dstBlocks: [0] }, 'dstBlocks: must list as many blocks as srcBlocks (2), got 1'],
      [{ srcBlocks: [] }, 'srcBlocks: must list at least one block'],
      [{ srcBlocks: [0, -1] }, 'srcBlocks[1]'],
      [{ dstBlocks: [0, 1.5] }, 'dstBlocks[1]'],
      [{ timeoutMs: 0 }, 'timeoutMs'],
      [{ timeoutMs: 2 ** 31 }, 'timeoutMs'],
      [{ remoteClusterId: -1n }, 'remoteClusterId'],
      [{ endpoint: '9' }, 'endpoint'],
    ];
    for (const [over, message] of cases) {
      const result = await pull(over);
      expect(result).toMatchObject({ ret: S.LLM_PARAM_INVALID, bytes: 0, aborted: false });
      expect(result.message).toContain(message);
    }
  });

  test('an aborted signal stops the pull before it moves anything', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await d.transfers.pullBlocks({
      remoteClusterId: 1n,
      remoteCacheId: 1n,
      srcBlocks: all,
      dstCacheId: 2n,
      dstBlocks: all,
      signal: controller.signal,
    });
    expect(result).toMatchObject({ ret: S.LLM_FAILED, aborted: true, bytes: 0 });
  });

  test('metrics count what moved, by op and outcome', async () => {
    const text = await d.metrics.metrics();
    expect(text).toMatch(/pdlink_runtime_transfer_bytes_total\{op="pull"\} \d+/);
    expect(text).toContain('pdlink_runtime_transfers_total{op="pull",code="LLM_SUCCESS"} 1');
    expect(text).toContain('pdlink_runtime_transfers_total{op="pull",code="aborted"} 1');
    expect(text).toContain('pdlink_runtime_transfers_total{op="pull",code="LLM_NOT_YET_LINK"} 1');
    expect(text).toContain('pdlink_runtime_transfers_running{op="pull"} 0');
    expect(text).toContain('pdlink_runtime_transfer_duration_seconds_count{op="push",outcome="success"} 1');
  });
});

describe('caches', () => {
  test('register twice, unknown caches, write length, unregister', async () => {
    const t = p.transfers;
    expect(await t.registerCache('0', { cacheId: 1n, numBlocks: 4, blockBytes: BLOCK })).toMatchObject({ retName: 'LLM_PARAM_INVALID' });
    expect(await t.registerCache('0', { cacheId: 3n, numBlocks: 0, blockBytes: BLOCK })).toMatchObject({ retName: 'LLM_PARAM_INVALID' });
    expect(await t.registerCache('7', { cacheId: 3n, numBlocks: 1, blockBytes: BLOCK })).toMatchObject({ retName: 'LLM_PARAM_INVALID' });
    expect(await t.registerCache('0', { cacheId: 3n, numBlocks: 2, blockBytes: 16 })).toEqual({ ret: 0, retName: 'LLM_SUCCESS' });
    expect(t.caches()).toContainEqual({ endpoint: '0', cacheId: 3n, numBlocks: 2, blockBytes: 16 });
    // Every caller gets the length check the HTTP route reports, naming the argument.
    expect(await t.writeBlocks('0', 3n, [1], new Uint8Array(15))).toEqual({
      ret: S.LLM_PARAM_INVALID,
      retName: 'LLM_PARAM_INVALID',
      message: 'data: must hold 1 × 16 = 16 bytes, got 15',
      refused: { field: 'data', reason: 'must hold 1 × 16 = 16 bytes, got 15' },
    });
    expect((await t.writeBlocks('0', 3n, [2], new Uint8Array(16))).retName).toBe('LLM_KV_CACHE_NOT_EXIST');
    expect((await t.writeBlocks('0', 3n, [1], new Uint8Array(16).fill(4))).ret).toBe(0);
    expect((await t.readBlocks('0', 3n, [1])).data).toEqual(new Uint8Array(16).fill(4));
    expect(await t.unregisterCache('0', 3n)).toEqual({ ret: 0, retName: 'LLM_SUCCESS' });
    expect((await t.unregisterCache('0', 3n)).retName).toBe('LLM_KV_CACHE_NOT_EXIST');
    expect((await t.readBlocks('0', 3n, [1])).retName).toBe('LLM_KV_CACHE_NOT_EXIST');
    expect(t.caches().some((c) => c.cacheId === 3n)).toBe(false);
  });
});
