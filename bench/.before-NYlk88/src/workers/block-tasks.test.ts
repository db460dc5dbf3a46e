import { describe, expect, test } from 'bun:test';
import { LLM_STATUS as S } from '../core/llm-status.ts';
import { CONTROL, CONTROL_SLOTS, type TransferTask } from './block-protocol.ts';
import type { BlockRuntime, ChunkSpec, Status } from './block-runtime.ts';
import { runBlockTask } from './block-tasks.ts';

/** A runtime that records every chunk and answers from a script. */
function recording(answer: (chunk: ChunkSpec, index: number) => Status = () => ({ rc: 0 }), onChunk?: (index: number) => void) {
  const chunks: { remote: number[]; local: number[]; timeoutMs: number; op: string }[] = [];
  const record =
    (op: string) =>
    (_handle: number, chunk: ChunkSpec): Status => {
      chunks.push({ remote: Array.from(chunk.remoteBlocks), local: Array.from(chunk.localBlocks), timeoutMs: chunk.timeoutMs, op });
      onChunk?.(chunks.length - 1);
      return answer(chunk, chunks.length - 1);
    };
  const runtime: BlockRuntime = {
    register: () => ({ rc: 0 }),
    unregister: () => ({ rc: S.LLM_KV_CACHE_NOT_EXIST, message: 'no such cache' }),
    write: (_h, _c, blocks, data) => ({ rc: data.byteLength === blocks.length * 4 ? 0 : S.LLM_PARAM_INVALID }),
    read: (_h, _c, blocks, into) => {
      blocks.forEach((b, i) => into.fill(b, i * 4, i * 4 + 4));
      return { rc: 0 };
    },
    pull: record('pull'),
    push: record('push'),
    setFastpath: () => ({ rc: 0 }),
  };
  return { runtime, chunks };
}

function transferTask(n: number, overrides: Partial<TransferTask> = {}): TransferTask {
  const lists = new SharedArrayBuffer(n * 8);
  const remote = new Uint32Array(lists, 0, n);
  const local = new Uint32Array(lists, n * 4, n);
  for (let i = 0; i < n; i++) {
    remote[i] = 100 + i;
    local[i] = 200 + i;
  }
  return {
    op: 'kv-pull',
    handle: 1,
    remoteClusterId: 7n,
    remoteCacheId: 1n,
    localCacheId: 2n,
    lists,
    n,
    chunkBlocks: 4,
    sliceMs: 60_000,
    deadline: Date.now() + 60_000,
    timeoutMs: 60_000,
    control: new SharedArrayBuffer(CONTROL_SLOTS * 4),
    ...overrides,
  };
}

describe('transfer slices', () => {
  test('a list moves in chunks of at most chunkBlocks, pairs kept, progress published', () => {
    const { runtime, chunks } = recording();
    const task = transferTask(10);
    expect(runBlockTask(runtime, task)).toEqual({ rc: 0, done: 10, end: 'complete' });
    expect(chunks.map((c) => c.remote)).toEqual([
      [100, 101, 102, 103],
      [104, 105, 106, 107],
      [108, 109],
    ]);
    expect(chunks.map((c) => c.local[0])).toEqual([200, 204, 208]);
    expect(chunks.every((c) => c.op === 'pull' && c.timeoutMs <= 60_000)).toBe(true);
    const control = new Int32Array(task.control);
    expect(Atomics.load(control, CONTROL.done)).toBe(10);
    expect(Atomics.load(control, CONTROL.inRuntime)).toBe(0);
  });

  test('a slice claims from where the shared counter stands, and a push calls push', () => {
    const { runtime, chunks } = recording();
    const task = transferTask(10, { op: 'kv-push' });
    Atomics.store(new Int32Array(task.control), CONTROL.next, 8);
    expect(runBlockTask(runtime, task)).toEqual({ rc: 0, done: 2, end: 'complete' });
    expect(chunks).toEqual([{ remote: [108, 109], local: [208, 209], timeoutMs: expect.any(Number), op: 'push' }]);
  });

  test('slices of one transfer claim disjoint chunks and add up what they moved', () => {
    const task = transferTask(12, { sliceMs: 0 });
    const { runtime, chunks } = recording();
    // One chunk per slice (no time budget): three slices share the list.
    expect(runBlockTask(runtime, task)).toEqual({ rc: 0, done: 4, end: 'sliced' });
    expect(runBlockTask(runtime, task)).toEqual({ rc: 0, done: 4, end: 'sliced' });
    expect(runBlockTask(runtime, task)).toEqual({ rc: 0, done: 4, end: 'complete' });
    expect(runBlockTask(runtime, task)).toEqual({ rc: 0, done: 0, end: 'complete' });
    expect(chunks.map((c) => c.remote[0])).toEqual([100, 104, 108]);
    expect(Atomics.load(new Int32Array(task.control), CONTROL.done)).toBe(12);
  });

  test('after a failure in one slice, the others claim nothing more', () => {
    const task = transferTask(12);
    Atomics.store(new Int32Array(task.control), CONTROL.failed, 1);
    const { runtime, chunks } = recording();
    expect(runBlockTask(runtime, task)).toEqual({ rc: 0, done: 0, end: 'complete' });
    expect(chunks).toHaveLength(0);
  });

  test('each call gets at most the time left before the deadline', () => {
    const { runtime, chunks } = recording();
    runBlockTask(runtime, transferTask(4, { deadline: Date.now() + 5_000, timeoutMs: 60_000 }));
    expect(chunks[0]!.timeoutMs).toBeLessThanOrEqual(5_000);
    expect(chunks[0]!.timeoutMs).toBeGreaterThan(0);
  });

  test('a failed chunk ends the slice with its code and what moved before it', () => {
    const { runtime, chunks } = recording((_, i) => (i === 1 ? { rc: S.LLM_KV_CACHE_NOT_EXIST, message: 'block 107' } : { rc: 0 }));
    const task = transferTask(12);
    expect(runBlockTask(runtime, task)).toEqual({ rc: S.LLM_KV_CACHE_NOT_EXIST, done: 4, end: 'complete', message: 'block 107' });
    expect(chunks).toHaveLength(2);
    expect(Atomics.load(new Int32Array(task.control), CONTROL.failed)).toBe(1);
  });

  test('the abort flag stops the slice before the next chunk', () => {
    const task = transferTask(12);
    const control = new Int32Array(task.control);
    const { runtime, chunks } = recording(undefined, (i) => {
      expect(Atomics.load(control, CONTROL.inRuntime)).toBe(1);
      expect(Atomics.load(control, CONTROL.inSlice)).toBe(1);
      if (i === 0) Atomics.store(control, CONTROL.abort, 1);
    });
    expect(runBlockTask(runtime, task)).toEqual({ rc: 0, done: 4, end: 'aborted' });
    expect(chunks).toHaveLength(1);
    expect(Atomics.load(control, CONTROL.inSlice)).toBe(0);
    // Aborted before it started: the runtime is never called.
    const again = recording();
    expect(runBlockTask(again.runtime, task)).toEqual({ rc: 0, done: 0, end: 'aborted' });
    expect(again.chunks).toHaveLength(0);
  });

  test('a spent time budget ends the slice with blocks left', () => {
    const { runtime, chunks } = recording();
    expect(runBlockTask(runtime, transferTask(12, { sliceMs: 0 }))).toEqual({ rc: 0, done: 4, end: 'sliced' });
    expect(chunks).toHaveLength(1);
  });

  test('a deadline already passed answers TIMEOUT without calling the runtime', () => {
    const { runtime, chunks } = recording();
    const reply = runBlockTask(runtime, transferTask(4, { deadline: Date.now() - 1 }));
    expect(reply).toMatchObject({ rc: S.LLM_TIMEOUT, done: 0, end: 'complete' });
    expect(reply.message).toContain('4 of 4 blocks not moved');
    expect(chunks).toHaveLength(0);
  });
});

describe('cache tasks', () => {
  test('statuses come back as data, with the runtime message', () => {
    const { runtime } = recording();
    expect(runBlockTask(runtime, { op: 'kv-register', handle: 1, cacheId: 1n, numBlocks: 4, blockBytes: 4 })).toEqual({
      rc: 0,
      done: 0,
      end: 'complete',
    });
    expect(runBlockTask(runtime, { op: 'kv-unregister', handle: 1, cacheId: 9n })).toEqual({
      rc: S.LLM_KV_CACHE_NOT_EXIST,
      done: 0,
      end: 'complete',
      message: 'no such cache',
    });
    expect(runBlockTask(runtime, { op: 'kv-fastpath', handle: 1, enabled: false }).rc).toBe(0);
    const blocks = new Uint32Array(new SharedArrayBuffer(8)).fill(3);
    expect(
      runBlockTask(runtime, { op: 'kv-write', handle: 1, cacheId: 1n, blocks, data: new Uint8Array(new SharedArrayBuffer(7)) }).rc,
    ).toBe(S.LLM_PARAM_INVALID);
    const data = new Uint8Array(new SharedArrayBuffer(8));
    expect(runBlockTask(runtime, { op: 'kv-read', handle: 1, cacheId: 1n, blocks, data }).rc).toBe(0);
    expect(Array.from(data)).toEqual([3, 3, 3, 3, 3, 3, 3, 3]);
  });

  test('a runtime without block support throws, so the task fails as a whole', () => {
    expect(() => runBlockTask(undefined, { op: 'kv-unregister', handle: 1, cacheId: 1n })).toThrow('no KV block support');
  });
});
