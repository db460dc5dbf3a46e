/**
 * The LinkManager on Deno, over the worker pool and the real runtime, as an agent composes it: link
 * and unlink with LLM-DataDist's codes, runtime events through the event pump, and the error paths
 * (bad arguments, a wrong cluster secret, a peer process killed).
 */
import assert from 'node:assert/strict';
import { LLM_STATUS as S } from '../../src/core/llm-status.ts';
import { listenPort } from '../../src/ffi/index.ts';
import { LinkManager } from '../../src/links/manager.ts';
import type { EndpointTarget } from '../../src/links/types.ts';
import { CONTROL_SLOTS, type BlockReply } from '../../src/workers/block-protocol.ts';
import { EventPump } from '../../src/workers/event-pump.ts';
import { PoolLinkExecutor } from '../../src/workers/pool-executor.ts';
import { WorkerPool, type PoolTask } from '../../src/workers/pool.ts';
import type { ContextSecurity } from '../../src/workers/protocol.ts';
import { Peer } from '../support/runtime-peer.ts';

const P_IP = '127.0.0.2';
const D_IP = '127.0.0.3';
const SECRET = new TextEncoder().encode('deno-links-cluster-secret');
let nextId = BigInt(Date.now()) * 1000n + 800n;
const freshId = (): bigint => ++nextId;

/** Polls `condition` until it holds, failing after a bound generous for a busy shared machine. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > end) assert.fail(`not reached: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

interface Side {
  readonly id: bigint;
  readonly handle: number;
  readonly port: number;
  readonly pool: WorkerPool;
  readonly manager: LinkManager;
  close(): Promise<void>;
}

/** One endpoint ('0') as an agent builds it: a context in a pool, the executor, the manager, the pump. */
async function side(role: 'prompt' | 'decoder', security: ContextSecurity = {}): Promise<Side> {
  const pool = new WorkerPool({ threads: 2 });
  const events = new WorkerPool({ threads: 1 });
  const id = freshId();
  const created = await pool.run<number>({
    op: 'create',
    clusterId: id,
    role,
    listenIp: role === 'prompt' ? P_IP : null,
    listenPort: 0,
    security,
  });
  if (!created.ok) assert.fail(created.message);
  const handle = created.value;
  const manager = new LinkManager({ executor: new PoolLinkExecutor({ pool, handles: new Map([['0', handle]]) }), endpoints: ['0'] });
  const pump = new EventPump({
    pool: events,
    endpoints: new Map([[handle, '0']]),
    onEvent: (e, event) => manager.handleRuntimeEvent(e, event),
  });
  pump.start();
  return {
    id,
    handle,
    port: role === 'prompt' ? listenPort(handle) : 0,
    pool,
    manager,
    close: async () => {
      await manager.idle();
      await pump.stop();
      await pool.run({ op: 'destroy', handle });
      await Promise.all([pool.close(), events.close()]);
    },
  };
}

const target = (p: { id: bigint; port: number }): EndpointTarget => ({
  remoteClusterId: p.id,
  remote: { ip: P_IP, port: p.port },
  local: { ip: D_IP, port: 0 },
});

/** A one-block pull of P's cache 1 into D's cache 2 through D's pool: the reply's status. */
async function pullOne(d: Side, pId: bigint): Promise<number> {
  const lists = new SharedArrayBuffer(8);
  const task = {
    op: 'kv-pull',
    handle: d.handle,
    remoteClusterId: pId,
    remoteCacheId: 1n,
    localCacheId: 2n,
    lists,
    n: 1,
    chunkBlocks: 1,
    sliceMs: 10_000,
    deadline: Date.now() + 3000,
    timeoutMs: 3000,
    control: new SharedArrayBuffer(CONTROL_SLOTS * 4),
  } satisfies PoolTask;
  const reply = await d.pool.run<BlockReply>(task);
  return reply.ok ? reply.value.rc : reply.code;
}

Deno.test('link and unlink through the LinkManager; P learns of both from its event pump', async () => {
  const p = await side('prompt', { linkSecret: SECRET });
  const d = await side('decoder', { linkSecret: SECRET });
  try {
    assert.deepEqual(await d.manager.linkClusters([target(p)]), { ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    assert.equal(d.manager.get('0', p.id)?.state, 'linked');
    await until(() => p.manager.get('0', d.id)?.state === 'linked', 'P lists the link from D');
    assert.equal(p.manager.get('0', d.id)?.side, 'server');
    assert.deepEqual(await d.manager.linkClusters([target(p)]), { ret: S.LLM_FAILED, rets: [S.LLM_ALREADY_LINK] });

    assert.deepEqual(await d.manager.unlinkClusters([target(p)]), { ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    assert.equal(d.manager.get('0', p.id), undefined);
    await until(() => p.manager.get('0', d.id) === undefined, 'P drops the unlinked client');
    assert.deepEqual((await d.manager.linkClusters([target(p)])).rets, [S.LLM_SUCCESS]);
  } finally {
    await d.close();
    await p.close();
  }
});

Deno.test('bad arguments to the LinkManager are LLM_PARAM_INVALID (or the cluster limit) and link nothing', async () => {
  const p = await side('prompt');
  const d = await side('decoder');
  try {
    const ok = target(p);
    assert.deepEqual(await d.manager.linkClusters([{ ...ok, remote: { ip: P_IP, port: 70_000 } }]), {
      ret: S.LLM_FAILED,
      rets: [S.LLM_PARAM_INVALID],
    });
    assert.deepEqual(await d.manager.linkClusters([ok], { timeoutMs: 0 }), { ret: S.LLM_PARAM_INVALID, rets: [S.LLM_PARAM_INVALID] });
    assert.deepEqual((await d.manager.linkClusters([{ ...ok, endpoint: '9' }])).rets, [S.LLM_PARAM_INVALID]);
    const many = Array.from({ length: 17 }, () => ok);
    assert.deepEqual(await d.manager.linkClusters(many), {
      ret: S.LLM_CLUSTER_NUM_EXCEED_LIMIT,
      rets: many.map(() => S.LLM_CLUSTER_NUM_EXCEED_LIMIT),
    });
    assert.notEqual(d.manager.get('0', p.id)?.state, 'linked');
    assert.deepEqual(await d.pool.run({ op: 'list', handle: d.handle }), { ok: true, value: [] });
    // Nothing was charged to the peer: the same cluster links at once with good arguments.
    assert.deepEqual((await d.manager.linkClusters([ok])).rets, [S.LLM_SUCCESS]);
  } finally {
    await d.close();
    await p.close();
  }
});

Deno.test('a wrong cluster secret is LLM_LINK_FAILED: P never holds a link, and a KV pull moves no byte', async () => {
  const p = await side('prompt', { linkSecret: SECRET });
  const d = await side('decoder', { linkSecret: new TextEncoder().encode('not-the-cluster-secret') });
  try {
    for (const [s, cache] of [
      [p, 1n],
      [d, 2n],
    ] as const) {
      const reply = await s.pool.run<BlockReply>({ op: 'kv-register', handle: s.handle, cacheId: cache, numBlocks: 1, blockBytes: 64 });
      assert.equal(reply.ok && reply.value.rc, 0);
    }
    assert.deepEqual(await d.manager.linkClusters([target(p)]), { ret: S.LLM_FAILED, rets: [S.LLM_LINK_FAILED] });
    assert.deepEqual([d.manager.get('0', p.id)?.state, d.manager.get('0', p.id)?.code], ['failed', S.LLM_LINK_FAILED]);
    assert.deepEqual(await p.pool.run({ op: 'list', handle: p.handle }), { ok: true, value: [] });
    assert.equal(p.manager.get('0', d.id), undefined);
    assert.equal(await pullOne(d, p.id), S.LLM_NOT_YET_LINK);
    const data = new Uint8Array(new SharedArrayBuffer(64)).fill(0xee);
    const blocks = new Uint32Array(new SharedArrayBuffer(4));
    const read = await d.pool.run<BlockReply>({ op: 'kv-read', handle: d.handle, cacheId: 2n, blocks, data });
    assert.equal(read.ok && read.value.rc, 0);
    assert.deepEqual(data, new Uint8Array(64));
  } finally {
    await d.close();
    await p.close();
  }
});

Deno.test('a peer process killed: the manager marks the link failed with LLM_LINK_FAILED, and a relink fails the same way', async () => {
  const peer = new Peer();
  const d = await side('decoder');
  try {
    const pId = freshId();
    const { port } = await peer.ok('create', { clusterId: String(pId), role: 'prompt', listenIp: P_IP });
    const toP = target({ id: pId, port: port as number });
    assert.deepEqual((await d.manager.linkClusters([toP])).rets, [S.LLM_SUCCESS]);
    await peer.kill();
    await until(() => d.manager.get('0', pId)?.state === 'failed', 'D hears that P is gone');
    assert.equal(d.manager.get('0', pId)?.code, S.LLM_LINK_FAILED);
    assert.deepEqual(await d.pool.run({ op: 'list', handle: d.handle }), { ok: true, value: [] });
    assert.deepEqual(await d.manager.linkClusters([toP], { timeoutMs: 1000 }), { ret: S.LLM_FAILED, rets: [S.LLM_LINK_FAILED] });
  } finally {
    await peer.kill();
    await d.close();
  }
});
