import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { createServer, type Server, type Socket } from 'node:net';
import { LLM_STATUS as S } from '../core/llm-status.ts';
import * as rt from '../ffi/index.ts';
import { encodeClusters, sharedRets } from './encoding.ts';
import { WorkerPool, type LinkThreads } from './pool.ts';
import type { Encoding, LinkReply, LinkTask, TaskReply, WorkerCluster } from './protocol.ts';

const contexts: number[] = [];
let p: number;
let q: number;
let hole: Server;
let holePort: number;
const held: Socket[] = [];

function context(clusterId: bigint, listenIp?: string): number {
  const handle = rt.create({
    clusterId,
    role: listenIp === undefined ? 'decoder' : 'prompt',
    ...(listenIp === undefined ? {} : { listenIp }),
  });
  contexts.push(handle);
  return handle;
}

beforeAll(async () => {
  p = context(61n, '127.0.0.2');
  q = context(62n, '127.0.0.2');
  // A peer that accepts and never answers: a link to it runs until its timeout.
  hole = createServer((socket) => held.push(socket));
  await new Promise<void>((resolve) => hole.listen(0, '127.0.0.2', resolve));
  holePort = (hole.address() as { port: number }).port;
});

afterAll(async () => {
  for (const handle of contexts) rt.destroy(handle);
  for (const socket of held) socket.destroy();
  await new Promise((resolve) => hole.close(resolve));
});

const to = (id: bigint, port: number, ip = '127.0.0.2'): WorkerCluster => ({ id, ip, port, localIp: '', localPort: 0 });

/** A link task as PoolLinkExecutor sends it, with every encoding's codes read back the same way. */
async function call(
  pool: WorkerPool,
  op: 'link' | 'unlink',
  handle: number,
  clusters: readonly WorkerCluster[],
  options: { encoding?: Encoding; timeoutMs?: number; deadline?: number; force?: boolean; signal?: AbortSignal } = {},
): Promise<TaskReply<LinkReply>> {
  const { batch, transfer } = encodeClusters(options.encoding ?? 'clone', clusters);
  const timeoutMs = options.timeoutMs ?? 2000;
  const task: Omit<LinkTask, 'taskId'> = {
    op,
    handle,
    timeoutMs,
    deadline: options.deadline ?? Date.now() + timeoutMs,
    force: options.force ?? false,
    batch,
  };
  const reply = await pool.run<LinkReply>(task, { transfer, ...(options.signal === undefined ? {} : { signal: options.signal }) });
  if (!reply.ok || batch.enc !== 'shared') return reply;
  return { ok: true, value: { ...reply.value, rets: Array.from(sharedRets(batch.buffer, batch.n)) } };
}

/** One history of calls on a fresh client context, every reply in order. */
async function history(linkThreads: LinkThreads, clientId: bigint): Promise<unknown[]> {
  const pool = new WorkerPool({ threads: 2, linkThreads });
  const d = context(clientId);
  const P = to(61n, rt.listenPort(p));
  const Q = to(62n, rt.listenPort(q));
  const out: unknown[] = [];
  try {
    out.push(await call(pool, 'link', d, [P, Q, to(69n, 1)]));
    out.push(await call(pool, 'link', d, [P], { encoding: 'msgpack' }));
    out.push(await call(pool, 'unlink', d, [to(61n, 0, '')], { force: true, encoding: 'shared' }));
    // The server still holds its end: ALREADY_LINK, and this runtime is not a holder.
    out.push(await call(pool, 'link', d, [P, Q]));
    rt.unlink(p, [{ remoteClusterId: clientId, remoteIp: '', remotePort: 0 }], 1000, true);
    out.push(await call(pool, 'link', d, [P], { encoding: 'shared' }));
    out.push(await call(pool, 'unlink', d, [P, Q]));
    out.push(await call(pool, 'unlink', d, [P], { encoding: 'msgpack' }));
    out.push(
      await call(
        pool,
        'link',
        d,
        Array.from({ length: 17 }, (_, i) => to(100n + BigInt(i), 1)),
      ),
    );
    out.push(await call(pool, 'link', d, [to(70n, 1, '1'.repeat(64))], { encoding: 'msgpack' }));
    out.push(await call(pool, 'link', d, [P, Q], { deadline: Date.now() - 1, encoding: 'shared' }));
    out.push(await call(pool, 'link', 0, [P]));
    out.push(pool.linkThreads);
    return out;
  } finally {
    await pool.close();
  }
}

describe('link calls on the runtime threads', () => {
  test('answer every call as a link worker does, code for code, in every encoding', async () => {
    const native = await history('native', 501n);
    const workers = await history('workers', 502n);
    expect(native.pop()).toBe('native');
    expect(workers.pop()).toBe('workers');
    expect(native).toEqual(workers);
    // And the history is the one expected, so both cannot be wrong alike.
    const ok = (rc: number, rets: number[], holders?: unknown[]) => ({ ok: true, value: { rc, rets, ...(holders ? { holders } : {}) } });
    expect(native).toEqual([
      ok(S.LLM_FAILED, [S.LLM_SUCCESS, S.LLM_SUCCESS, S.LLM_LINK_FAILED]),
      ok(S.LLM_FAILED, [S.LLM_ALREADY_LINK], ['client']),
      ok(S.LLM_SUCCESS, [S.LLM_SUCCESS]),
      ok(S.LLM_FAILED, [S.LLM_ALREADY_LINK, S.LLM_ALREADY_LINK], [undefined, 'client']),
      ok(S.LLM_SUCCESS, [S.LLM_SUCCESS]),
      ok(S.LLM_SUCCESS, [S.LLM_SUCCESS, S.LLM_SUCCESS]),
      ok(S.LLM_FAILED, [S.LLM_NOT_YET_LINK]),
      ok(S.LLM_CLUSTER_NUM_EXCEED_LIMIT, new Array(17).fill(S.LLM_CLUSTER_NUM_EXCEED_LIMIT)),
      ok(S.LLM_PARAM_INVALID, [S.LLM_PARAM_INVALID]),
      ok(S.LLM_FAILED, [S.LLM_TIMEOUT, S.LLM_TIMEOUT]),
      ok(S.LLM_PARAM_INVALID, [S.LLM_PARAM_INVALID]),
    ]);
  });

  test('calls beyond the threads wait their turn; every one is answered', async () => {
    const pool = new WorkerPool({ threads: 1 });
    const d = context(503n);
    try {
      const replies = Array.from({ length: 150 }, (_, i) => call(pool, 'link', d, [to(200n + BigInt(i), 1)]));
      expect(pool.queued).toBe(149);
      for (const reply of await Promise.all(replies))
        expect(reply).toEqual({ ok: true, value: { rc: S.LLM_FAILED, rets: [S.LLM_LINK_FAILED] } });
      expect(pool.queued).toBe(0);
      expect(pool.linkThreads).toBe('native');
    } finally {
      await pool.close();
    }
  });

  test('an aborted call is answered at once; a queued one never runs; the thread goes on', async () => {
    const pool = new WorkerPool({ threads: 1 });
    const d = context(504n);
    try {
      const running = new AbortController();
      const queued = new AbortController();
      const hung = call(pool, 'link', d, [to(80n, holePort)], { timeoutMs: 500, signal: running.signal });
      const behind = call(pool, 'link', d, [to(61n, rt.listenPort(p))], { signal: queued.signal });
      queued.abort(new Error('not wanted'));
      expect(await behind).toEqual({ ok: false, code: S.LLM_FAILED, message: 'task aborted: not wanted' });
      running.abort(new Error('gave up'));
      expect(await hung).toEqual({ ok: false, code: S.LLM_FAILED, message: 'task aborted: gave up' });
      // The link to 61 was never made: the queued task left before a thread took it.
      expect(rt.listLinks(d).map((l) => l.remoteClusterId)).not.toContain(61n);
      const after = await call(pool, 'link', d, [to(62n, rt.listenPort(q))]);
      expect(after).toEqual({ ok: true, value: { rc: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] } });
      expect(await call(pool, 'unlink', d, [to(62n, 0, '')])).toEqual({ ok: true, value: { rc: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] } });
      const already = new AbortController();
      already.abort();
      expect(await call(pool, 'link', d, [to(62n, 1)], { signal: already.signal })).toEqual({
        ok: false,
        code: S.LLM_FAILED,
        message: 'task aborted: The operation was aborted.',
      });
    } finally {
      await pool.close();
    }
  });

  test('closing answers running and queued calls as closed, then waits for the runtime to end them', async () => {
    const pool = new WorkerPool({ threads: 1 });
    const d = context(505n);
    const hung = call(pool, 'link', d, [to(81n, holePort)], { timeoutMs: 300 });
    const behind = call(pool, 'link', d, [to(61n, rt.listenPort(p))]);
    const closing = pool.close();
    const closed = { ok: false, code: S.LLM_FAILED, message: 'worker pool is closed' } as const;
    expect(await hung).toEqual(closed);
    expect(await behind).toEqual(closed);
    await closing;
    // The call that ran has ended (by its timeout): no link is left half made.
    expect(rt.listLinks(d)).toEqual([]);
    expect(await call(pool, 'link', d, [to(61n, rt.listenPort(p))])).toEqual(closed);
  });

  test('a pool with its own worker module, or told so, links on worker threads', async () => {
    const d = context(506n);
    const own = new WorkerPool({ threads: 1, filename: new URL('./link-worker.ts', import.meta.url) });
    const told = new WorkerPool({ threads: 1, linkThreads: 'workers' });
    try {
      for (const pool of [own, told]) {
        expect(pool.linkThreads).toBeUndefined();
        expect(await call(pool, 'unlink', d, [to(61n, 0, '')])).toEqual({
          ok: true,
          value: { rc: S.LLM_FAILED, rets: [S.LLM_NOT_YET_LINK] },
        });
        expect(pool.linkThreads).toBe('workers');
      }
    } finally {
      await Promise.all([own.close(), told.close()]);
    }
  });

  test('random histories of calls, aborts and a close: every task is answered once, and no thread or slot is lost', async () => {
    const step = fc.record({
      slow: fc.boolean(),
      abort: fc.constantFrom('never', 'at once', 'after a turn'),
      turns: fc.nat({ max: 2 }),
    });
    let histories = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 12 }),
        fc.nat({ max: 12 }),
        fc.integer({ min: 1, max: 3 }),
        async (steps, closeAt, threads) => {
          const pool = new WorkerPool({ threads });
          const d = rt.create({ clusterId: 600n + BigInt(++histories), role: 'decoder' });
          const answers: TaskReply<LinkReply>[][] = steps.map(() => []);
          const replies: Promise<void>[] = [];
          let closing: Promise<void> | undefined;
          try {
            for (const [i, s] of steps.entries()) {
              if (i === closeAt) closing = pool.close();
              const controller = new AbortController();
              const target = s.slow ? to(BigInt(700 + i), holePort) : to(BigInt(700 + i), 1);
              const reply = call(pool, 'link', d, [target], { timeoutMs: s.slow ? 60 : 1000, signal: controller.signal });
              replies.push(reply.then((r) => void answers[i]!.push(r)));
              if (s.abort === 'at once') controller.abort(new Error('gave up'));
              else if (s.abort === 'after a turn') setImmediate(() => controller.abort(new Error('gave up')));
              for (let t = 0; t < s.turns; t++) await new Promise((r) => setImmediate(r));
            }
            await Promise.all(replies);
            // One answer each, and a known one: the call's codes, an abort, or the pool closing.
            for (const [i, got] of answers.entries()) {
              expect(got).toHaveLength(1);
              const r = got[0]!;
              if (r.ok) expect(r.value.rets).toEqual([steps[i]!.slow ? S.LLM_TIMEOUT : S.LLM_LINK_FAILED]);
              else expect(['task aborted: gave up', 'worker pool is closed']).toContain(r.message);
            }
            if (closing === undefined) {
              // Every slot came back: as many calls as threads run at once again, and answer.
              const again = await Promise.all(
                Array.from({ length: threads + 1 }, (_, k) => call(pool, 'link', d, [to(BigInt(800 + k), 1)])),
              );
              for (const r of again) expect(r).toEqual({ ok: true, value: { rc: S.LLM_FAILED, rets: [S.LLM_LINK_FAILED] } });
              expect(pool.queued).toBe(0);
            }
          } finally {
            await (closing ?? pool.close());
            rt.destroy(d);
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 60_000);
});
