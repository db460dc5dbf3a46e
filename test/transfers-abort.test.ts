/**
 * Aborting large pulls: D is an agent in this process with a single transfer thread (so "the
 * worker is free" is observable) pulling over TCP from a `pdlink instance` P in another process.
 * A stopped P (SIGSTOP) holds the first chunk of a pull inside the runtime; the abort lands while
 * it is there, and the pull must stop right after that chunk instead of moving the rest.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { createInstanceAgent, type InstanceAgent } from '../src/apps/agent.ts';
import { createRegistry } from '../src/core/metrics.ts';
import { cleanupConfigs, patternOf, prepareCache, startAgent, stop, until, type Agent } from './fixtures/transfers/harness.ts';

const BLOCK = 256 * 1024;
const NBLOCKS = 128; // 32 MiB
const CHUNK_BYTES = 1024 * 1024; // 4 blocks per runtime call
const CHUNK_BLOCKS = CHUNK_BYTES / BLOCK;
const TEST_TIMEOUT_MS = 60_000;
const ALL = Array.from({ length: NBLOCKS }, (_, b) => b);

let p: Agent;
let d: InstanceAgent;

beforeAll(async () => {
  p = await startAgent('127.0.0.2', { sameHost: true });
  await prepareCache(p, 1, NBLOCKS, BLOCK, 5);
  for (let attempt = 0; ; attempt++) {
    try {
      d = await createInstanceAgent({
        devices: [{ endpoint: '0', ip: '127.0.0.5', port: 20000 + Math.floor(Math.random() * 30000), clusterId: 5n }],
        threads: 1,
        metrics: createRegistry(),
        transfers: { threads: 1, sameHostFastpath: false, chunkBytes: CHUNK_BYTES },
      });
      break;
    } catch (err) {
      if (attempt > 5 || !/cannot open link endpoint/.test(String(err))) throw err;
    }
  }
  expect((await d.transfers.registerCache('0', { cacheId: 2n, numBlocks: NBLOCKS, blockBytes: BLOCK })).ret).toBe(0);
  expect((await d.linkManager.linkClusters([{ remoteClusterId: p.clusterId, remote: { ip: p.ip, port: p.linkPort } }])).ret).toBe(0);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  if (p !== undefined && p.child.process.exitCode === null && p.child.process.signalCode === null) process.kill(p.pid, 'SIGCONT');
  await Promise.all([p?.child.kill('SIGTERM'), d?.close()]);
  cleanupConfigs();
}, TEST_TIMEOUT_MS);

const pull = (signal?: AbortSignal) =>
  d.transfers.pullBlocks({
    remoteClusterId: p.clusterId,
    remoteCacheId: 1n,
    srcBlocks: ALL,
    dstCacheId: 2n,
    dstBlocks: ALL,
    timeoutMs: 30_000,
    ...(signal === undefined ? {} : { signal }),
  });

/** Stops P, starts a pull and waits until its first chunk is inside the runtime (wrapped: not awaited). */
async function stalledPull(signal?: AbortSignal) {
  await stop(p.pid);
  const result = pull(signal);
  await until(() => (d.transfers.active()[0]?.inRuntime === true ? true : undefined), 'the first chunk in the runtime');
  return { result };
}

test(
  'an abort during a large pull stops it after the chunk in flight, and frees the only worker',
  async () => {
    const controller = new AbortController();
    const { result } = await stalledPull(controller.signal);
    // A second pull queues behind it on the single transfer thread.
    const queued = d.transfers.pullBlocks({
      remoteClusterId: p.clusterId,
      remoteCacheId: 1n,
      srcBlocks: [7, 8],
      dstCacheId: 2n,
      dstBlocks: [100, 101],
      timeoutMs: 30_000,
    });
    controller.abort();
    process.kill(p.pid, 'SIGCONT');
    expect(await result).toMatchObject({
      ret: 0xffffffff | 0,
      retName: 'LLM_FAILED',
      aborted: true,
      blocks: CHUNK_BLOCKS,
      bytes: CHUNK_BYTES,
    });
    // The thread went straight to the queued pull instead of moving the other 31 MiB.
    expect(await queued).toMatchObject({ ret: 0, blocks: 2 });
    expect(d.transfers.active()).toEqual([]);
    const read = await d.transfers.readBlocks('0', 2n, [0, 1, 2, 3, 4, 100, 101]);
    expect(
      Buffer.from(read.data!).equals(Buffer.concat([patternOf(5, [0, 1, 2, 3], BLOCK), Buffer.alloc(BLOCK), patternOf(5, [7, 8], BLOCK)])),
    ).toBe(true);
  },
  TEST_TIMEOUT_MS,
);

test(
  'an abort of a pull still queued answers at once, without waiting for the busy worker',
  async () => {
    const { result: first } = await stalledPull();
    const controller = new AbortController();
    const queued = d.transfers.pullBlocks({
      remoteClusterId: p.clusterId,
      remoteCacheId: 1n,
      srcBlocks: ALL,
      dstCacheId: 2n,
      dstBlocks: ALL,
      timeoutMs: 30_000,
      signal: controller.signal,
    });
    controller.abort();
    // P is still stopped and the only thread still waits in the runtime for the first pull.
    expect(await queued).toMatchObject({ retName: 'LLM_FAILED', aborted: true, blocks: 0, bytes: 0 });
    expect(d.transfers.active()).toHaveLength(1);
    process.kill(p.pid, 'SIGCONT');
    expect(await first).toMatchObject({ ret: 0, blocks: NBLOCKS, bytes: NBLOCKS * BLOCK });
  },
  TEST_TIMEOUT_MS,
);

test(
  'a pull queued behind a busy worker answers TIMEOUT by its own deadline, leaving its link usable',
  async () => {
    const { result: first } = await stalledPull();
    const started = Date.now();
    const queued = await d.transfers.pullBlocks({
      remoteClusterId: p.clusterId,
      remoteCacheId: 1n,
      srcBlocks: [1],
      dstCacheId: 2n,
      dstBlocks: [1],
      timeoutMs: 300,
    });
    expect(queued).toMatchObject({ retName: 'LLM_TIMEOUT', aborted: false, blocks: 0 });
    expect(Date.now() - started).toBeLessThan(300 + 2000);
    process.kill(p.pid, 'SIGCONT');
    expect(await first).toMatchObject({ ret: 0, blocks: NBLOCKS });
    // It never reached the runtime, so the link was not marked unusable.
    expect(d.linkManager.get('0', p.clusterId)).toMatchObject({ state: 'linked' });
    expect(await pull()).toMatchObject({ ret: 0, blocks: NBLOCKS });
  },
  TEST_TIMEOUT_MS,
);

test(
  'over HTTP, a client that goes away aborts its pull',
  async () => {
    await stop(p.pid);
    const controller = new AbortController();
    const response = d.managementApp.request('/v1/kv/pull', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        remote_cluster_id: Number(p.clusterId),
        remote_cache_id: 1,
        src_blocks: ALL,
        dst_cache_id: 2,
        dst_blocks: ALL,
        timeout: 30_000,
      }),
      signal: controller.signal,
    });
    await until(() => (d.transfers.active()[0]?.inRuntime === true ? true : undefined), 'the HTTP pull in the runtime');
    controller.abort();
    process.kill(p.pid, 'SIGCONT');
    expect(await (await response).json()).toMatchObject({ ret_name: 'LLM_FAILED', aborted: true, blocks: CHUNK_BLOCKS });
    expect(await d.metrics.metrics()).toContain('pdlink_runtime_transfers_total{op="pull",code="aborted"} 3');
  },
  TEST_TIMEOUT_MS,
);
