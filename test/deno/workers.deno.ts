/**
 * The piscina worker pool under `deno run -A`: the TypeScript worker file loads, `sync` atomics
 * carry the replies, a worker that dies or is aborted fails only its task and is replaced, and the
 * FFI-backed worker runs the device runtime (contexts, links, KV blocks, events) on handles that
 * every thread of the pool shares as numbers.
 */
import assert from 'node:assert/strict';
import { LLM_STATUS as S } from '../../src/core/llm-status.ts';
import { listenPort } from '../../src/ffi/index.ts';
import type { RuntimeLinkEvent } from '../../src/links/types.ts';
import { CONTROL_SLOTS, type BlockReply } from '../../src/workers/block-protocol.ts';
import { encodeClusters } from '../../src/workers/encoding.ts';
import { EventPump } from '../../src/workers/event-pump.ts';
import { DEFAULT_ATOMICS, WorkerPool, type PoolTask } from '../../src/workers/pool.ts';
import type { LinkReply, WorkerCluster } from '../../src/workers/protocol.ts';
import { echo } from '../fixtures/links/echo-task.ts';

const SIM_WORKER = new URL('../fixtures/links/sim-worker.ts', import.meta.url);
const P_IP = '127.0.0.2';
const BLOCK = 128;
let nextId = BigInt(Date.now()) * 1000n + 500n;
const freshId = (): bigint => ++nextId;

/** Polls `condition` until it holds, failing after a generous bound. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 60_000; // generous: under `deno test` every new worker thread is type-checked first
  while (!condition()) {
    if (Date.now() > end) assert.fail(`not reached: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The value of an ok reply; fails the test on a failure reply. */
async function ok<T>(pool: WorkerPool, task: PoolTask): Promise<T> {
  const reply = await pool.run<T>(task);
  if (!reply.ok) assert.fail(`${task.op} failed: ${reply.message}`);
  return reply.value;
}

Deno.test('pool mechanics on Deno: sync atomics, a killed worker, a worker that exits, an aborted task', async () => {
  assert.equal(DEFAULT_ATOMICS, 'sync');
  const pool = new WorkerPool({ threads: 2, filename: SIM_WORKER });
  try {
    assert.deepEqual(await pool.run(echo(0)), { ok: true, value: 0 });
    assert.equal(pool.threads, 2);

    const doomed = pool.submit(echo(20_000));
    const survivor = pool.submit(echo(50));
    await until(() => pool.threadOf(doomed.taskId) !== 0, 'the doomed task runs');
    assert.equal(await pool.terminateThreadOf(doomed.taskId), true);
    const died = await doomed.reply;
    assert.equal(died.ok, false);
    assert.match(died.ok ? '' : died.message, /^worker died/);
    assert.equal(died.ok ? 0 : died.code, S.LLM_FAILED);
    assert.deepEqual(await survivor.reply, { ok: true, value: 50 });

    const exited = await pool.run({ op: 'exit' } as unknown as PoolTask);
    assert.deepEqual([exited.ok, exited.ok ? 0 : exited.code], [false, S.LLM_FAILED]);

    const controller = new AbortController();
    const aborted = pool.submit(echo(20_000), { signal: controller.signal });
    await until(() => pool.threadOf(aborted.taskId) !== 0, 'the task to abort runs');
    controller.abort();
    const reply = await aborted.reply;
    assert.match(reply.ok ? '' : reply.message, /^task aborted/);

    // Every thread lost above was replaced: both run tasks again, side by side.
    assert.deepEqual(await Promise.all([pool.run(echo(30)), pool.run(echo(30))]), [
      { ok: true, value: 30 },
      { ok: true, value: 30 },
    ]);
    assert.equal(pool.threads, 2);
  } finally {
    await pool.close();
  }
  assert.deepEqual(await pool.run(echo(0)), { ok: false, code: S.LLM_FAILED, message: 'worker pool is closed' });
});

Deno.test('the FFI worker: contexts, a link, a pull and a push through the pool, on handles every thread shares', async () => {
  const pool = new WorkerPool({ threads: 2 });
  const pump = new WorkerPool({ threads: 1 });
  const events: [string, RuntimeLinkEvent][] = [];
  try {
    const pId = freshId();
    const dId = freshId();
    const p = await ok<number>(pool, { op: 'create', clusterId: pId, role: 'prompt', listenIp: P_IP, listenPort: 0 });
    const d = await ok<number>(pool, { op: 'create', clusterId: dId, role: 'decoder', listenIp: null, listenPort: 0 });
    const eventPump = new EventPump({ pool: pump, endpoints: new Map([[p, 'p']]), onEvent: (endpoint, e) => events.push([endpoint, e]) });
    eventPump.start();

    // Both handles go to whichever thread is free, and this thread asks for the port on the same
    // handle: the contexts are the process's, not a thread's.
    assert.deepEqual(await ok(pool, { op: 'list', handle: p }), []);
    const port = listenPort(p);
    const cluster: WorkerCluster = { id: pId, ip: P_IP, port, localIp: '127.0.0.3', localPort: 0 };
    const { batch } = encodeClusters('clone', [cluster]);
    const linked = await ok<LinkReply>(pool, { op: 'link', handle: d, timeoutMs: 3000, deadline: Date.now() + 3000, force: false, batch });
    assert.deepEqual(linked.rets, [S.LLM_SUCCESS]);
    assert.equal(pool.linkThreads, 'native', "the link was made by the runtime's threads, answered through Deno's thread-safe callback");
    await until(
      () => events.some(([endpoint, e]) => endpoint === 'p' && e.kind === 'peer-linked' && e.remoteClusterId === dId),
      'P hears of the link',
    );
    assert.deepEqual(
      events.find(([, e]) => e.kind === 'peer-linked')?.[1].side,
      'server',
      'the event pump names the side, never the runtime number',
    );

    for (const [handle, cache] of [
      [p, 1n],
      [d, 2n],
    ] as const) {
      assert.deepEqual(await ok<BlockReply>(pool, { op: 'kv-register', handle, cacheId: cache, numBlocks: 4, blockBytes: BLOCK }), {
        rc: 0,
        done: 0,
        end: 'complete',
      });
    }
    const source = shared(Uint8Array.from({ length: 2 * BLOCK }, (_, i) => (i * 13 + 1) & 0xff));
    assert.equal((await ok<BlockReply>(pool, { op: 'kv-write', handle: p, cacheId: 1n, blocks: blocks([2, 3]), data: source })).rc, 0);
    const pulled = await ok<BlockReply>(pool, transfer('kv-pull', d, pId, [3, 2], [0, 1]));
    assert.deepEqual([pulled.rc, pulled.done], [0, 2]);
    const into = shared(new Uint8Array(2 * BLOCK));
    assert.equal((await ok<BlockReply>(pool, { op: 'kv-read', handle: d, cacheId: 2n, blocks: blocks([1, 0]), data: into })).rc, 0);
    assert.deepEqual(into, source);

    const pushed = await ok<BlockReply>(pool, transfer('kv-push', d, pId, [0], [1]));
    assert.deepEqual([pushed.rc, pushed.done], [0, 1]);
    const back = shared(new Uint8Array(BLOCK));
    await ok<BlockReply>(pool, { op: 'kv-read', handle: p, cacheId: 1n, blocks: blocks([0]), data: back });
    assert.deepEqual(back, source.subarray(0, BLOCK));

    const unlinked = await ok<LinkReply>(pool, {
      op: 'unlink',
      handle: d,
      timeoutMs: 3000,
      deadline: Date.now() + 3000,
      force: false,
      batch,
    });
    assert.deepEqual(unlinked.rets, [S.LLM_SUCCESS]);
    await until(() => events.some(([, e]) => e.kind === 'peer-unlinked' && e.remoteClusterId === dId), 'P hears of the unlink');
    const refused = await ok<BlockReply>(pool, transfer('kv-pull', d, pId, [0], [0]));
    assert.equal(refused.rc, S.LLM_NOT_YET_LINK);

    await eventPump.stop();
    await ok(pool, { op: 'destroy', handle: d });
    await ok(pool, { op: 'destroy', handle: p });
  } finally {
    await pool.close();
    await pump.close();
  }
});

Deno.test('through the pool, a bad argument is LLM_PARAM_INVALID naming the field, and the worker lives on', async () => {
  const pool = new WorkerPool({ threads: 1 });
  try {
    const reply = await pool.run({ op: 'create', clusterId: freshId(), role: 'prompt', listenIp: '300.1.1.1', listenPort: 0 });
    assert.deepEqual(reply.ok ? undefined : [reply.code, reply.message.split(':')[0]], [S.LLM_PARAM_INVALID, 'listenIp']);
    const noSecret = await pool.run({
      op: 'create',
      clusterId: freshId(),
      role: 'prompt',
      listenIp: null,
      listenPort: 0,
      security: { linkSecret: new Uint8Array(4) },
    });
    assert.deepEqual(noSecret.ok ? undefined : [noSecret.code, noSecret.message.split(':')[0]], [S.LLM_PARAM_INVALID, 'linkSecret']);
    const d = await ok<number>(pool, { op: 'create', clusterId: freshId(), role: 'decoder', listenIp: null, listenPort: 0 });
    const { batch } = encodeClusters('clone', [{ id: 1n, ip: P_IP, port: 70_000, localIp: '', localPort: 0 }]);
    const linked = await ok<LinkReply>(pool, { op: 'link', handle: d, timeoutMs: 1000, deadline: Date.now() + 1000, force: false, batch });
    assert.deepEqual(linked.rets, [S.LLM_PARAM_INVALID]);
    assert.deepEqual(await ok(pool, { op: 'list', handle: d }), []);
    await ok(pool, { op: 'destroy', handle: d });
  } finally {
    await pool.close();
  }
});

function shared(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
  out.set(bytes);
  return out;
}

function blocks(list: number[]): Uint32Array {
  const out = new Uint32Array(new SharedArrayBuffer(list.length * 4));
  out.set(list);
  return out;
}

function transfer(op: 'kv-pull' | 'kv-push', handle: number, remoteClusterId: bigint, remote: number[], local: number[]): PoolTask {
  const lists = new SharedArrayBuffer(remote.length * 8);
  new Uint32Array(lists, 0, remote.length).set(remote);
  new Uint32Array(lists, remote.length * 4, local.length).set(local);
  return {
    op,
    handle,
    remoteClusterId,
    remoteCacheId: 1n,
    localCacheId: 2n,
    lists,
    n: remote.length,
    chunkBlocks: 16,
    sliceMs: 10_000,
    deadline: Date.now() + 3000,
    timeoutMs: 3000,
    control: new SharedArrayBuffer(CONTROL_SLOTS * 4),
  };
}
