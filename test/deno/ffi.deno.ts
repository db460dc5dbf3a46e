/**
 * The device runtime through src/ffi on Deno (`Deno.dlopen`): the same calls, codes and bytes as
 * on Bun, a context handle shared with a worker thread as a number, and the error paths (a bad
 * argument, a wrong cluster secret, a peer process killed).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { PdlinkError } from '../../src/core/errors.ts';
import { LLM_STATUS as S, LlmStatusError } from '../../src/core/llm-status.ts';
import * as ffi from '../../src/ffi/index.ts';
import { Peer } from '../support/runtime-peer.ts';

const P_IP = '127.0.0.2';
const D_IP = '127.0.0.3';
const BLOCK = 256;
const SECRET = new TextEncoder().encode('deno-ffi-cluster-secret');
let nextId = BigInt(Date.now()) * 1000n;
const freshId = (): bigint => ++nextId;

/** The LlmStatusError `fn` throws, failing the test when it throws nothing or something else. */
function statusOf(fn: () => unknown): LlmStatusError {
  try {
    fn();
  } catch (error) {
    if (error instanceof LlmStatusError) return error;
    throw error;
  }
  assert.fail('did not throw');
}

function pattern(seed: number, blocks: number): Uint8Array {
  return Uint8Array.from({ length: blocks * BLOCK }, (_, i) => (seed * 131 + i * 7) & 0xff);
}

function read(handle: number, cacheId: bigint, blocks: number[]): Uint8Array {
  const out = new Uint8Array(blocks.length * BLOCK);
  ffi.readBlocks(handle, cacheId, blocks, out);
  return out;
}

/** A P context listening on P_IP with cache 1 filled, and a client-only D context with cache 2. */
function pair(pSecret?: Uint8Array, dSecret?: Uint8Array) {
  const pId = freshId();
  const dId = freshId();
  const p = ffi.create({ clusterId: pId, role: 'prompt', listenIp: P_IP, ...(pSecret ? { linkSecret: pSecret } : {}) });
  const d = ffi.create({ clusterId: dId, role: 'decoder', ...(dSecret ? { linkSecret: dSecret } : {}) });
  ffi.registerBlocks(p, 1n, 8, BLOCK);
  ffi.writeBlocks(p, 1n, [0, 1, 2, 3], pattern(5, 4));
  ffi.registerBlocks(d, 2n, 8, BLOCK);
  const toP = { remoteClusterId: pId, remoteIp: P_IP, remotePort: ffi.listenPort(p), localIp: D_IP };
  return { p, d, pId, dId, toP, close: () => [d, p].forEach((h) => ffi.destroy(h)) };
}

/** Waits (bounded) for an event of `kind` from `remote` on `handle`. */
function waitEvent(handle: number, kind: number, remote: bigint): ffi.PdrtEvent {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const found = ffi.pollEvents(handle).find((e) => e.kind === kind && e.remoteClusterId === remote);
    if (found !== undefined) return found;
    ffi.waitEvents(handle, 200);
  }
  assert.fail(`no event ${kind} from cluster ${remote}`);
}

Deno.test('the library loads through Deno.dlopen and reports the ABI version pdlink was written against', () => {
  assert.equal(ffi.abiVersion(), ffi.PDRT_ABI_VERSION);
});

Deno.test('a missing library or one that is not a library is a clear error naming the path', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-deno-abi-'));
  try {
    const missing = join(dir, 'missing.so');
    assert.throws(
      () => ffi.loadRuntime(missing),
      (e: unknown) => e instanceof PdlinkError && e.message.includes(missing) && /no such file/.test(e.message),
    );
    const junk = join(dir, 'junk.so');
    writeFileSync(junk, 'not an ELF file');
    assert.throws(
      () => ffi.loadRuntime(junk),
      (e: unknown) => e instanceof PdlinkError && e.message.includes(junk) && /cannot load/.test(e.message),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

Deno.test('link, pull, push, unlink: bytes arrive exactly and both ends see the link come and go', () => {
  const { p, d, pId, dId, toP, close } = pair(SECRET, SECRET);
  try {
    assert.deepEqual(ffi.link(d, [toP], 3000), { ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    assert.deepEqual(
      ffi.listLinks(d).map((l) => [l.remoteClusterId, l.side, l.state]),
      [[pId, ffi.SIDE.client, ffi.LINK_STATE.linked]],
    );
    assert.equal(waitEvent(p, ffi.EVENT_KIND.peerLinked, dId).side, ffi.SIDE.server);
    assert.deepEqual(ffi.link(d, [toP], 3000), { ret: S.LLM_FAILED, rets: [S.LLM_ALREADY_LINK] });

    ffi.pullBlocks(d, {
      remoteClusterId: pId,
      remoteCacheId: 1n,
      remoteBlocks: [3, 0],
      localCacheId: 2n,
      localBlocks: [6, 7],
      timeoutMs: 3000,
    });
    const source = pattern(5, 4);
    assert.deepEqual(read(d, 2n, [6, 7]), Uint8Array.from([...source.subarray(3 * BLOCK), ...source.subarray(0, BLOCK)]));

    ffi.writeBlocks(d, 2n, [5], pattern(9, 1));
    ffi.pushBlocks(d, { remoteClusterId: pId, remoteCacheId: 1n, remoteBlocks: [7], localCacheId: 2n, localBlocks: [5], timeoutMs: 3000 });
    assert.deepEqual(read(p, 1n, [7]), pattern(9, 1));

    assert.deepEqual(ffi.unlink(d, [{ ...toP, remoteIp: '' }], 3000), { ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    assert.deepEqual(ffi.listLinks(d), []);
    waitEvent(p, ffi.EVENT_KIND.peerUnlinked, dId);
    assert.deepEqual(ffi.listLinks(p), []);
    assert.deepEqual(ffi.unlink(d, [toP], 3000).rets, [S.LLM_NOT_YET_LINK]);
  } finally {
    close();
  }
});

Deno.test('a context handle is a number valid in every thread: a worker thread pulls on the handle this thread made', async () => {
  const { d, pId, toP, close } = pair();
  const worker = new Worker(new URL('../fixtures/runtime/pull-worker.ts', import.meta.url));
  try {
    assert.equal(ffi.link(d, [toP], 3000).ret, S.LLM_SUCCESS);
    const reply = new Promise<Record<string, unknown>>((resolve) => worker.once('message', resolve));
    worker.postMessage({
      seq: 1,
      handle: d,
      remoteClusterId: String(pId),
      remoteCacheId: '1',
      remoteBlocks: [1, 2],
      localCacheId: '2',
      localBlocks: [0, 1],
      timeoutMs: 3000,
    });
    assert.equal(typeof d, 'number');
    assert.deepEqual((await reply)['ok'], true);
    assert.deepEqual(read(d, 2n, [0, 1]), pattern(5, 4).subarray(BLOCK, 3 * BLOCK));
  } finally {
    await worker.terminate();
    close();
  }
});

Deno.test('a bad argument is LLM_PARAM_INVALID naming the field, and changes nothing', () => {
  const { d, pId, toP, close } = pair();
  try {
    const cases: [string, () => unknown][] = [
      ['clusters[0].remotePort', () => ffi.link(d, [{ ...toP, remotePort: 70000 }], 3000)],
      ['clusters[1].remoteIp', () => ffi.link(d, [toP, { ...toP, remoteIp: 'x'.repeat(64) }], 3000)],
      ['timeoutMs', () => ffi.link(d, [toP], 0)],
      ['listenIp', () => ffi.create({ clusterId: freshId(), role: 'prompt', listenIp: 'not-an-ip' })],
      ['linkSecret', () => ffi.create({ clusterId: freshId(), role: 'prompt', linkSecret: new Uint8Array(3) })],
      ['handle', () => ffi.listLinks(-1)],
      [
        'localBlocks',
        () =>
          ffi.pullBlocks(d, {
            remoteClusterId: pId,
            remoteCacheId: 1n,
            remoteBlocks: [0, 1],
            localCacheId: 2n,
            localBlocks: [0],
            timeoutMs: 1000,
          }),
      ],
      [
        'remoteBlocks[0]',
        () =>
          ffi.pullBlocks(d, {
            remoteClusterId: pId,
            remoteCacheId: 1n,
            remoteBlocks: [-1],
            localCacheId: 2n,
            localBlocks: [0],
            timeoutMs: 1000,
          }),
      ],
    ];
    for (const [field, call] of cases) {
      const error = statusOf(call);
      assert.equal(error.code, S.LLM_PARAM_INVALID, field);
      assert.match(error.message, new RegExp(`^${field.replace(/[[\]]/g, '\\$&')}: `), field);
    }
    const many = Array.from({ length: 17 }, () => toP);
    assert.equal(statusOf(() => ffi.link(d, many, 3000)).code, S.LLM_CLUSTER_NUM_EXCEED_LIMIT);
    assert.deepEqual(ffi.listLinks(d), []);
    assert.deepEqual(read(d, 2n, [0]), new Uint8Array(BLOCK));
  } finally {
    close();
  }
});

Deno.test('a wrong cluster secret is LLM_LINK_FAILED: no link on either end, no byte moved', () => {
  const other = new TextEncoder().encode('another-cluster-secret');
  for (const [pSecret, dSecret] of [
    [SECRET, other],
    [SECRET, undefined],
  ] as const) {
    const { p, d, pId, toP, close } = pair(pSecret, dSecret);
    try {
      assert.deepEqual(ffi.link(d, [toP], 3000), { ret: S.LLM_FAILED, rets: [S.LLM_LINK_FAILED] });
      assert.deepEqual(ffi.listLinks(d), []);
      assert.deepEqual(ffi.listLinks(p), []);
      const pull = { remoteClusterId: pId, remoteCacheId: 1n, remoteBlocks: [0], localCacheId: 2n, localBlocks: [0], timeoutMs: 1000 };
      assert.equal(statusOf(() => ffi.pullBlocks(d, pull)).code, S.LLM_NOT_YET_LINK);
      ffi.writeBlocks(d, 2n, [1], pattern(9, 1));
      assert.equal(statusOf(() => ffi.pushBlocks(d, { ...pull, localBlocks: [1], remoteBlocks: [6] })).code, S.LLM_NOT_YET_LINK);
      assert.deepEqual(read(d, 2n, [0]), new Uint8Array(BLOCK));
      assert.deepEqual(read(p, 1n, [6]), new Uint8Array(BLOCK));
    } finally {
      close();
    }
  }
});

Deno.test(
  'a peer process killed (kill -9): PEER_LOST with LLM_LINK_FAILED, the pull is LLM_NOT_YET_LINK, a relink LLM_LINK_FAILED',
  async () => {
    const peer = new Peer();
    const d = ffi.create({ clusterId: freshId(), role: 'decoder' });
    try {
      const pId = freshId();
      const { port } = await peer.ok('create', { clusterId: String(pId), role: 'prompt', listenIp: P_IP });
      await peer.ok('register', { cacheId: '1', numBlocks: 4, blockBytes: BLOCK });
      const toP = { remoteClusterId: pId, remoteIp: P_IP, remotePort: port as number, localIp: D_IP };
      assert.equal(ffi.link(d, [toP], 3000).ret, S.LLM_SUCCESS);
      ffi.registerBlocks(d, 2n, 4, BLOCK);
      const pull = { remoteClusterId: pId, remoteCacheId: 1n, remoteBlocks: [0], localCacheId: 2n, localBlocks: [0], timeoutMs: 3000 };
      ffi.pullBlocks(d, pull);

      await peer.kill();
      const lost = waitEvent(d, ffi.EVENT_KIND.peerLost, pId);
      assert.deepEqual([lost.side, lost.code], [ffi.SIDE.client, S.LLM_LINK_FAILED]);
      assert.deepEqual(ffi.listLinks(d), []);
      assert.equal(statusOf(() => ffi.pullBlocks(d, pull)).code, S.LLM_NOT_YET_LINK);
      assert.deepEqual(ffi.link(d, [toP], 1000).rets, [S.LLM_LINK_FAILED]);
    } finally {
      await peer.kill();
      ffi.destroy(d);
    }
  },
);
