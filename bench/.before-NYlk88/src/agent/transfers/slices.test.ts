import { describe, expect, test } from 'bun:test';
import { LLM_STATUS as S } from '../../core/llm-status.ts';
import { CONTROL, CONTROL_SLOTS, type TransferTask } from '../../workers/block-protocol.ts';
import type { BlockRuntime, ChunkSpec, Status } from '../../workers/block-runtime.ts';
import { runBlockTask } from '../../workers/block-tasks.ts';
import type { WorkerPool } from '../../workers/pool.ts';
import type { TaskReply } from '../../workers/protocol.ts';
import { runSlices } from './slices.ts';

/** A pool that runs block tasks on this thread, one turn of the event loop later, or never. */
function fakePool(pull: (chunk: ChunkSpec) => Status, mode: 'run' | 'queued forever' | 'dies' = 'run') {
  const runtime = { pull: (_h: number, c: ChunkSpec) => pull(c) } as unknown as BlockRuntime;
  let slices = 0;
  const pool = {
    threads: 2,
    run(task: TransferTask): Promise<TaskReply<unknown>> {
      slices++;
      if (mode === 'queued forever') return new Promise(() => {});
      if (mode === 'dies') return Promise.resolve({ ok: false, code: S.LLM_FAILED, message: 'worker died: exit 1' });
      return new Promise((resolve) => setImmediate(() => resolve({ ok: true, value: runBlockTask(runtime, task) })));
    },
  };
  return { pool: pool as unknown as WorkerPool, slices: () => slices };
}

function task(n: number, overrides: Partial<TransferTask> = {}): TransferTask {
  return {
    op: 'kv-pull',
    handle: 1,
    remoteClusterId: 7n,
    remoteCacheId: 1n,
    localCacheId: 2n,
    lists: new SharedArrayBuffer(n * 8),
    n,
    chunkBlocks: 2,
    sliceMs: 0,
    deadline: Date.now() + 60_000,
    timeoutMs: 60_000,
    control: new SharedArrayBuffer(CONTROL_SLOTS * 4),
    ...overrides,
  };
}

describe('runSlices', () => {
  test('parallel slices share the list and queue again until every chunk moved', async () => {
    const seen: number[] = [];
    const { pool, slices } = fakePool((c) => {
      seen.push(c.remoteBlocks.length);
      return { rc: 0 };
    });
    expect(await runSlices({ pool, task: task(9), parallel: 2 })).toEqual({ rc: 0, moved: 9, aborted: false });
    expect(seen).toEqual([2, 2, 2, 2, 1]);
    // One chunk per slice (no time budget), plus slices that found nothing left to claim.
    expect(slices()).toBeGreaterThanOrEqual(5);
  });

  test('the first failure wins and stops the other slices', async () => {
    let calls = 0;
    const { pool } = fakePool(() => (++calls === 2 ? { rc: S.LLM_KV_CACHE_NOT_EXIST, message: 'block 9' } : { rc: 0 }));
    const t = task(20);
    const outcome = await runSlices({ pool, task: t, parallel: 2 });
    expect(outcome).toMatchObject({ rc: S.LLM_KV_CACHE_NOT_EXIST, aborted: false, message: 'block 9' });
    expect(outcome.moved).toBeLessThan(20);
    expect(Atomics.load(new Int32Array(t.control), CONTROL.failed)).toBe(1);
  });

  test('a dead worker fails the transfer with its message', async () => {
    const { pool } = fakePool(() => ({ rc: 0 }), 'dies');
    expect(await runSlices({ pool, task: task(4), parallel: 2 })).toEqual({
      rc: S.LLM_FAILED,
      moved: 0,
      aborted: false,
      message: 'worker died: exit 1',
    });
  });

  test('slices that never leave the queue: TIMEOUT at the deadline, the abort flag set for when they run', async () => {
    const { pool } = fakePool(() => ({ rc: 0 }), 'queued forever');
    const t = task(4, { deadline: Date.now() + 50, timeoutMs: 50 });
    const outcome = await runSlices({ pool, task: t, parallel: 2 });
    expect(outcome).toMatchObject({ rc: S.LLM_TIMEOUT, moved: 0, aborted: false });
    expect(outcome.message).toContain('4 of 4 blocks not moved');
    expect(Atomics.load(new Int32Array(t.control), CONTROL.abort)).toBe(1);
  });

  test('an abort while queued answers at once; an abort before the start launches nothing', async () => {
    const { pool, slices } = fakePool(() => ({ rc: 0 }), 'queued forever');
    const controller = new AbortController();
    const pending = runSlices({ pool, task: task(4), parallel: 2, signal: controller.signal });
    controller.abort();
    expect(await pending).toEqual({ rc: S.LLM_FAILED, moved: 0, aborted: true, message: 'aborted by the caller' });
    expect(slices()).toBe(2);
    const before = slices();
    expect(await runSlices({ pool, task: task(4), parallel: 2, signal: AbortSignal.abort() })).toMatchObject({ aborted: true });
    expect(slices()).toBe(before);
  });

  test('an abort that lands after the last chunk moved is a success', async () => {
    const controller = new AbortController();
    const { pool } = fakePool(() => {
      controller.abort();
      return { rc: 0 };
    });
    expect(await runSlices({ pool, task: task(2), parallel: 1, signal: controller.signal })).toEqual({ rc: 0, moved: 2, aborted: false });
  });
});
