import { describe, expect, test } from 'bun:test';
import { PrefillQueue } from './prefill-queue.ts';

describe('PrefillQueue', () => {
  test('prefills finish in arrival order, one at a time', async () => {
    const queue = new PrefillQueue();
    const order: string[] = [];
    const signal = new AbortController().signal;
    const a = queue.run(5, signal).then(() => order.push('a'));
    const b = queue.run(0, signal).then(() => order.push('b'));
    expect(queue.length).toBe(2);
    await Promise.all([a, b]);
    // b needs no time, yet waits for a.
    expect(order).toEqual(['a', 'b']);
    expect(queue.length).toBe(0);
  });

  test('a request aborted while queued resolves false and does not hold the queue', async () => {
    const queue = new PrefillQueue();
    const gone = new AbortController();
    const first = queue.run(0, new AbortController().signal);
    const second = queue.run(60_000, gone.signal);
    gone.abort();
    expect(await first).toBe(true);
    expect(await second).toBe(false);
    expect(await queue.run(0, new AbortController().signal)).toBe(true);
  });
});
