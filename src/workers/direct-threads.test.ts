import { afterAll, describe, expect, test } from 'bun:test';
import { LLM_STATUS as S } from '../core/llm-status.ts';
import { DirectThreads } from './direct-threads.ts';
import { BOARD_SLOTS } from './tasks.ts';
import { echo } from '../../test/fixtures/links/echo-task.ts';

const filename = new URL('../../test/fixtures/links/sim-worker.ts', import.meta.url).href;
const board = new Int32Array(new SharedArrayBuffer(BOARD_SLOTS * 4));
const threads = new DirectThreads({ threads: 2, filename, workerData: { board: board.buffer } });
afterAll(() => threads.close());

let nextId = 1;
/** An echo task with a task id, as the pool sends it. */
const task = (ms: number) => ({ ...echo(ms), taskId: nextId++ });

/** Polls `condition` until it holds or the deadline passes. */
async function until(condition: () => boolean, deadlineMs = 10000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met before the deadline');
    await new Promise((r) => setImmediate(r));
  }
}

const threadOf = (taskId: number) => Atomics.load(board, taskId % BOARD_SLOTS);

describe('DirectThreads', () => {
  test('runs tasks and answers with what the worker module returns', async () => {
    expect(await threads.run(task(0))).toEqual({ ok: true, value: 0 });
    expect(await Promise.all([threads.run(task(1)), threads.run(task(2)), threads.run(task(3))])).toEqual([
      { ok: true, value: 1 },
      { ok: true, value: 2 },
      { ok: true, value: 3 },
    ]);
  });

  test('one task per thread: a third task waits in the queue until a thread is free', async () => {
    const a = task(300);
    const b = task(300);
    const first = threads.run(a);
    const second = threads.run(b);
    await until(() => threadOf(a.taskId) !== 0 && threadOf(b.taskId) !== 0);
    const third = threads.run(task(0));
    expect(threads.queued).toBe(1);
    expect(await third).toEqual({ ok: true, value: 0 });
    expect(threads.queued).toBe(0);
    expect(await first).toEqual({ ok: true, value: 300 });
    expect(await second).toEqual({ ok: true, value: 300 });
  });

  test('a thread terminated mid-task fails only its task ("worker died"); a new thread takes its place', async () => {
    const doomed = task(20000);
    const reply = threads.run(doomed);
    const survivor = threads.run(task(50));
    await until(() => threadOf(doomed.taskId) !== 0);
    expect(await threads.terminate(threadOf(doomed.taskId))).toBe(true);
    const failed = await reply;
    expect(failed).toMatchObject({ ok: false, code: S.LLM_FAILED });
    expect(failed.ok ? '' : failed.message).toStartWith('worker died');
    expect(await survivor).toEqual({ ok: true, value: 50 });
    expect(await Promise.all([threads.run(task(1)), threads.run(task(2))])).toEqual([
      { ok: true, value: 1 },
      { ok: true, value: 2 },
    ]);
    expect(await threads.terminate(123456)).toBe(false);
  });

  test('a worker that exits by itself fails its task only', async () => {
    const reply = await threads.run({ op: 'exit', taskId: nextId++ });
    expect(reply).toMatchObject({ ok: false, code: S.LLM_FAILED });
    expect(reply.ok ? '' : reply.message).toStartWith('worker died');
    expect(await threads.run(task(0))).toEqual({ ok: true, value: 0 });
  });

  test('an aborted task fails with "task aborted", running or queued, and the threads go on', async () => {
    const controller = new AbortController();
    const running = task(20000);
    const runningReply = threads.run(running, { signal: controller.signal });
    const other = task(20000);
    const otherReply = threads.run(other, { signal: controller.signal });
    await until(() => threadOf(running.taskId) !== 0 && threadOf(other.taskId) !== 0);
    const queued = threads.run(task(0), { signal: controller.signal });
    controller.abort(new Error('caller left'));
    for (const reply of await Promise.all([runningReply, otherReply, queued])) {
      expect(reply).toEqual({ ok: false, code: S.LLM_FAILED, message: 'task aborted: caller left' });
    }
    const early = new AbortController();
    early.abort('gone');
    expect(await threads.run(task(0), { signal: early.signal })).toEqual({ ok: false, code: S.LLM_FAILED, message: 'task aborted: gone' });
    expect(await threads.run(task(0))).toEqual({ ok: true, value: 0 });
  });

  test('closing fails what is queued or running and answers later tasks without throwing', async () => {
    const own = new DirectThreads({ threads: 1, filename, workerData: { board: board.buffer } });
    const running = own.run(task(20000));
    const queued = own.run(task(0));
    await own.close();
    await own.close();
    const closed = { ok: false, code: S.LLM_FAILED, message: 'worker pool is closed' } as const;
    expect(await running).toEqual(closed);
    expect(await queued).toEqual(closed);
    expect(await own.run(task(0))).toEqual(closed);
  });
});
