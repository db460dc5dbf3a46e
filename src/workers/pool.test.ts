import { afterAll, describe, expect, test } from 'bun:test';
import { LLM_STATUS as S } from '../core/llm-status.ts';
import { LinkManager } from '../links/manager.ts';
import { PoolLinkExecutor } from './pool-executor.ts';
import { WorkerPool } from './pool.ts';
import { ENCODINGS } from './protocol.ts';
import { echo } from '../../test/fixtures/links/echo-task.ts';

const filename = new URL('../../test/fixtures/links/sim-worker.ts', import.meta.url);
const pool = new WorkerPool({ threads: 2, filename });
afterAll(() => pool.close());

/** Polls `condition` until it holds or the deadline passes. */
async function until(condition: () => boolean, deadlineMs = 10000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met before the deadline');
    await new Promise((r) => setImmediate(r));
  }
}

const target = (id: number, port = 26000) => ({ remoteClusterId: BigInt(id), remote: { ip: '127.0.0.2', port } });

describe('WorkerPool', () => {
  test('runs tasks and returns plain data', async () => {
    expect(await pool.run(echo(0))).toEqual({ ok: true, value: 0 });
    expect(pool.threads).toBe(2);
    expect(() => new WorkerPool({ threads: 0, filename })).toThrow('threads must be a positive integer');
  });

  test('a worker killed mid-call fails only its own task; the pool goes on', async () => {
    const doomed = pool.submit(echo(20000));
    const survivor = pool.submit(echo(50));
    await until(() => pool.threadOf(doomed.taskId) !== 0);
    expect(await pool.terminateThreadOf(doomed.taskId)).toBe(true);
    const reply = await doomed.reply;
    expect(reply).toMatchObject({ ok: false, code: S.LLM_FAILED });
    expect(reply.ok ? '' : reply.message).toStartWith('worker died');
    expect(await survivor.reply).toEqual({ ok: true, value: 50 });
    expect(await pool.run(echo(1))).toEqual({ ok: true, value: 1 });
    expect(await pool.terminateThreadOf(doomed.taskId)).toBe(false);
  });

  test('a worker that exits by itself fails its task only', async () => {
    const reply = await pool.run({ op: 'exit' } as never);
    expect(reply).toMatchObject({ ok: false, code: S.LLM_FAILED });
    expect(await pool.run(echo(0))).toEqual({ ok: true, value: 0 });
  });

  test('an aborted task fails with a code and a message', async () => {
    const controller = new AbortController();
    const task = pool.submit(echo(20000), { signal: controller.signal });
    await until(() => pool.threadOf(task.taskId) !== 0);
    controller.abort();
    const reply = await task.reply;
    expect(reply).toMatchObject({ ok: false, code: S.LLM_FAILED });
    expect(reply.ok ? '' : reply.message).toStartWith('task aborted');
    expect(await pool.run(echo(0))).toEqual({ ok: true, value: 0 });
  });

  test('a closed pool answers failures without throwing', async () => {
    const other = new WorkerPool({ threads: 1, filename });
    await other.close();
    await other.close();
    expect(await other.run(echo(0))).toMatchObject({ ok: false, message: 'worker pool is closed' });
  });
});

describe('PoolLinkExecutor', () => {
  for (const encoding of ENCODINGS) {
    test(`${encoding}: per-cluster codes in batch order`, async () => {
      // One thread: the simulated runtime keeps its links per thread, so an unlink must reach the
      // thread that linked (the real runtime's links belong to the context every thread shares).
      // Calls get 10 s: a loaded machine can take seconds to start a thread, and no case here is
      // about the timeout.
      const single = new WorkerPool({ threads: 1, filename });
      try {
        const executor = new PoolLinkExecutor({ pool: single, handles: new Map([['0', 1000 + ENCODINGS.indexOf(encoding)]]), encoding });
        const outcome = await executor.link('0', [target(1), target(2, 1), target(3)], 10_000);
        expect(outcome).toEqual({ rets: [S.LLM_SUCCESS, S.LLM_LINK_FAILED, S.LLM_SUCCESS] });
        expect((await executor.unlink('0', [target(3), target(4)], 10_000, false)).rets).toEqual([S.LLM_SUCCESS, S.LLM_NOT_YET_LINK]);
      } finally {
        await single.close();
      }
    });
  }

  test('ALREADY_LINK answers say whether this runtime holds the link: a peer that holds its end alone is not a holder', async () => {
    // One thread: the simulated runtime keeps its links per thread.
    const single = new WorkerPool({ threads: 1, filename });
    try {
      for (const encoding of ENCODINGS) {
        const executor = new PoolLinkExecutor({ pool: single, handles: new Map([['0', 2000 + ENCODINGS.indexOf(encoding)]]), encoding });
        expect(await executor.link('0', [target(1)], 10_000)).toEqual({ rets: [S.LLM_SUCCESS] });
        expect(await executor.link('0', [target(2), target(1), target(3, 3)], 10_000)).toEqual({
          rets: [S.LLM_SUCCESS, S.LLM_ALREADY_LINK, S.LLM_ALREADY_LINK],
          holders: [undefined, 'client', undefined],
        });
      }
    } finally {
      await single.close();
    }
  });

  test('a call refused as a whole gives every cluster its code; unknown endpoints are PARAM_INVALID', async () => {
    const executor = new PoolLinkExecutor({ pool, handles: new Map([['0', 7]]) });
    const many = Array.from({ length: 17 }, (_, i) => target(i));
    expect((await executor.link('0', many, 10_000)).rets).toEqual(new Array(17).fill(S.LLM_CLUSTER_NUM_EXCEED_LIMIT));
    expect((await executor.link('9', [target(1)], 10_000)).rets).toEqual([S.LLM_PARAM_INVALID]);
  });

  test('a batch that waited out its timeout in the queue is TIMEOUT without a runtime call', async () => {
    const single = new WorkerPool({ threads: 1, filename });
    try {
      const executor = new PoolLinkExecutor({ pool: single, handles: new Map([['0', 8]]) });
      // Link calls queue behind link calls: a peer that never answers holds the only link thread.
      expect((await executor.link('0', [target(9)], 10_000)).rets).toEqual([S.LLM_SUCCESS]);
      const blocker = executor.link('0', [target(10, 2)], 300);
      const late = await executor.link('0', [target(1)], 50);
      expect(late.rets).toEqual([S.LLM_TIMEOUT]);
      expect((await blocker).rets).toEqual([S.LLM_TIMEOUT]);
    } finally {
      await single.close();
    }
  });

  test('through the link manager: a killed worker fails only its batch, with LLM_FAILED', async () => {
    const executor = new PoolLinkExecutor({
      pool,
      handles: new Map([
        ['0', 20],
        ['1', 21],
      ]),
    });
    const manager = new LinkManager({ executor, endpoints: ['0', '1'], batchWindowMs: 0 });
    const hanging = manager.linkClusters(
      [
        { ...target(1, 2), endpoint: '0' },
        { ...target(2), endpoint: '0' },
      ],
      { timeoutMs: 20000 },
    );
    // The hanging batch occupies one thread; find it by elimination once it has started.
    await until(() => manager.get('0', 1n)?.state === 'linking');
    const healthy = await manager.linkClusters([{ ...target(3), endpoint: '1' }]);
    expect(healthy.ret).toBe(S.LLM_SUCCESS);
    const runningTask = (): number => {
      for (let id = 1; id < 10000; id++) if (pool.threadOf(id) !== 0) return id;
      return 0;
    };
    await until(() => runningTask() !== 0);
    const running = runningTask();
    expect(await pool.terminateThreadOf(running)).toBe(true);
    expect(await hanging).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_FAILED, S.LLM_FAILED] });
    expect(manager.get('0', 2n)).toMatchObject({ state: 'failed', code: S.LLM_FAILED });
    expect(manager.get('1', 3n)?.state).toBe('linked');
    expect((await manager.linkClusters([{ ...target(2), endpoint: '0' }])).rets).toEqual([S.LLM_SUCCESS]);
  });
});
