import { describe, expect, test } from 'bun:test';
import { Batcher, type BatchKey } from './batcher.ts';
import type { BatchOutcome, ClusterTarget } from './types.ts';

const key: BatchKey = { endpoint: '0', op: 'link', timeoutMs: 3000, force: false };
const target = (id: number): ClusterTarget => ({ remoteClusterId: BigInt(id), remote: { ip: '127.0.0.2', port: 26000 } });

/** A runner that records each call and answers only when the test says so. */
function heldRunner() {
  const calls: { ids: bigint[]; answer: () => void }[] = [];
  const run = (_key: BatchKey, clusters: readonly ClusterTarget[]) =>
    new Promise<BatchOutcome>((resolve) => {
      calls.push({ ids: clusters.map((c) => c.remoteClusterId), answer: () => resolve({ rets: clusters.map(() => 0) }) });
    });
  return { calls, run };
}

const turn = () => new Promise((r) => setImmediate(r));
async function until(condition: () => boolean): Promise<void> {
  for (let turns = 0; !condition() && turns < 1000; turns++) await turn();
  expect(condition()).toBe(true);
}

describe('Batcher', () => {
  test('items leaving together while calls could run at once are split evenly over the idle ones; none while all are busy', async () => {
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 16, windowMs: 3_600_000, parallelCalls: 3, run });
    const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => BigInt(from + i));
    // Three idle: 7 items as calls of 3, 3 and 1.
    const first = Array.from({ length: 7 }, (_, i) => batcher.push(key, target(i)));
    await Promise.resolve();
    expect(calls.map((c) => c.ids)).toEqual([ids(0, 3), ids(3, 3), ids(6, 1)]);
    // Items behind busy calls gather; when the calls out have answered they leave split again.
    const second = Array.from({ length: 5 }, (_, i) => batcher.push(key, target(10 + i)));
    await turn();
    expect(calls).toHaveLength(3);
    for (const c of calls) c.answer();
    await until(() => calls.length === 6);
    expect(calls.slice(3).map((c) => c.ids)).toEqual([ids(10, 2), ids(12, 2), ids(14, 1)]);
    await Promise.all(first);
    // All three busy: a full batch leaves at once, whole.
    const third = Array.from({ length: 16 }, (_, i) => batcher.push(key, target(20 + i)));
    expect(calls.slice(6).map((c) => c.ids)).toEqual([ids(20, 16)]);
    for (const c of calls.slice(3)) c.answer();
    expect((await Promise.all([...second, ...third])).every((o) => o.code === 0)).toBe(true);
  });

  test('without parallelCalls a batch is never split', async () => {
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 16, windowMs: 3_600_000, run });
    const outcomes = Array.from({ length: 16 }, (_, i) => batcher.push(key, target(i)));
    expect(calls.map((c) => c.ids.length)).toEqual([16]);
    calls[0]!.answer();
    await Promise.all(outcomes);
  });

  test('with nothing in flight a lone item is sent at the end of its turn, not after the window', async () => {
    // A window far longer than the test's timeout: only an immediate send can pass.
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 16, windowMs: 3_600_000, run });
    const outcome = batcher.push(key, target(1));
    await until(() => calls.length === 1);
    calls[0]!.answer();
    expect(await outcome).toMatchObject({ code: 0, indeterminate: false });
    expect(batcher.pending).toBe(0);
  });

  test('with nothing in flight a batch leaves within the microtasks of its turn, before the event loop turns', async () => {
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 16, windowMs: 3_600_000, run });
    let turned = false;
    setImmediate(() => (turned = true));
    const outcomes = [batcher.push(key, target(1)), batcher.push(key, target(2))];
    expect(calls).toHaveLength(0);
    await Promise.resolve();
    expect(turned).toBe(false);
    expect(calls.map((c) => c.ids)).toEqual([[1n, 2n]]);
    calls[0]!.answer();
    expect((await Promise.all(outcomes)).map((o) => o.code)).toEqual([0, 0]);
  });

  test('equal keys share a call whether or not they are the same object; a key differing in any field does not', async () => {
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 16, windowMs: 3_600_000, run });
    const outcomes = [
      batcher.push(key, target(1)),
      batcher.push({ ...key }, target(2)),
      batcher.push({ ...key, timeoutMs: 1000 }, target(3)),
      batcher.push({ ...key, op: 'unlink' }, target(4)),
      batcher.push({ ...key, op: 'unlink', force: true }, target(5)),
      batcher.push({ ...key, endpoint: '1' }, target(6)),
    ];
    await until(() => calls.length === 5);
    expect(calls.map((c) => c.ids)).toEqual([[1n, 2n], [3n], [4n], [5n], [6n]]);
    for (const c of calls) c.answer();
    expect((await Promise.all(outcomes)).map((o) => o.code)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  test('items queued in one turn share a call', async () => {
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 16, windowMs: 3_600_000, run });
    const outcomes = [1, 2, 3].map((id) => batcher.push(key, target(id)));
    await until(() => calls.length === 1);
    expect(calls[0]!.ids).toEqual([1n, 2n, 3n]);
    calls[0]!.answer();
    expect((await Promise.all(outcomes)).map((o) => o.code)).toEqual([0, 0, 0]);
  });

  test('while a call is in flight items gather, and go as one call when it answers', async () => {
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 16, windowMs: 3_600_000, run });
    const first = batcher.push(key, target(1));
    await until(() => calls.length === 1);
    // Three callers arriving in three separate turns while the first call is out.
    const later: Promise<unknown>[] = [];
    for (const id of [2, 3, 4]) {
      later.push(batcher.push(key, target(id)));
      await turn();
    }
    expect(calls).toHaveLength(1);
    expect(batcher.pending).toBe(3);
    calls[0]!.answer();
    await first;
    await until(() => calls.length === 2);
    expect(calls[1]!.ids).toEqual([2n, 3n, 4n]);
    calls[1]!.answer();
    await Promise.all(later);
    expect(batcher.pending).toBe(0);
  });

  test('while a call stays out, the window still bounds the wait of the items behind it', async () => {
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 16, windowMs: 1, run });
    void batcher.push(key, target(1));
    await until(() => calls.length === 1);
    const second = batcher.push(key, target(2));
    // The first call never answers; the second goes once its 1 ms window has passed.
    for (let i = 0; i < 200 && calls.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
    expect(calls.map((c) => c.ids)).toEqual([[1n], [2n]]);
    calls[1]!.answer();
    expect((await second).code).toBe(0);
  });

  test('a full batch leaves at once even while a call is in flight', async () => {
    const { calls, run } = heldRunner();
    const batcher = new Batcher({ maxBatch: 2, windowMs: 3_600_000, run });
    void batcher.push(key, target(1));
    await until(() => calls.length === 1);
    void batcher.push(key, target(2));
    void batcher.push(key, target(3));
    expect(calls.map((c) => c.ids)).toEqual([[1n], [2n, 3n]]);
  });
});
