/**
 * A worker killed in the middle of a runtime call fails only the items of its batch (LLM_FAILED,
 * "worker died"), while a batch on another worker completes and the pool goes on serving. The pool
 * links on worker threads here: the runtime's own threads (its default) cannot be killed.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { LLM_STATUS as S } from '../src/core/llm-status.ts';
import { startBlackhole } from './fixtures/links/harness.ts';
import { startClientStack, startServerSide, type ClientStack, type ServerSide } from './fixtures/links/stack.ts';

/** Generous per-test bound: these tests start processes and wait out link timeouts. */
const TEST_TIMEOUT_MS = 30_000;
let server: ServerSide;
let stack: ClientStack;
let hole: Awaited<ReturnType<typeof startBlackhole>>;

beforeAll(async () => {
  [server, stack, hole] = await Promise.all([
    startServerSide('127.0.0.2', 2, '127.0.0.3'),
    startClientStack({ threads: 2, maxBatch: 16, linkThreads: 'workers' }),
    startBlackhole('127.0.0.5'),
  ]);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await stack?.close();
  await server?.close();
  await hole?.close();
}, TEST_TIMEOUT_MS);

/** Polls until some task runs on a worker, returning its id. */
async function runningTask(deadlineMs = 10000): Promise<number> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    for (let id = 1; id < 4096; id++) if (stack.pool.threadOf(id) !== 0) return id;
    if (Date.now() > end) throw new Error('no task started before the deadline');
    await new Promise((r) => setImmediate(r));
  }
}

test(
  'a worker killed mid-call fails only its items; the pool goes on',
  async () => {
    const [first, second] = server.targets;
    const hanging = stack.manager.linkClusters(
      [
        { remoteClusterId: 77n, remote: { ip: '127.0.0.5', port: hole.port } },
        { remoteClusterId: 78n, remote: { ip: '127.0.0.5', port: hole.port } },
      ],
      { timeoutMs: 4000 },
    );
    const victim = await runningTask();
    // The other worker still serves while the first one is stuck in the runtime.
    expect((await stack.manager.linkClusters([first!])).ret).toBe(S.LLM_SUCCESS);
    expect(await stack.pool.terminateThreadOf(victim)).toBe(true);
    const started = Date.now();
    expect(await hanging).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_FAILED, S.LLM_FAILED] });
    // Killing the thread cannot interrupt the native call; the call's own timeout bounds it.
    expect(Date.now() - started).toBeLessThan(4000 + 2000);
    expect(stack.manager.get('0', 77n)).toMatchObject({ state: 'failed', code: S.LLM_FAILED });
    expect(stack.manager.get('0', first!.remoteClusterId)?.state).toBe('linked');
    const again = await stack.manager.linkClusters([second!]);
    expect(again.ret).toBe(S.LLM_SUCCESS);
    expect((await stack.manager.unlinkClusters([first!, second!])).ret).toBe(S.LLM_SUCCESS);
  },
  TEST_TIMEOUT_MS,
);
