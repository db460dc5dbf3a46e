import { describe, expect, test } from 'bun:test';
import { abortableDelay, backoffDelay } from './backoff.ts';

describe('backoffDelay', () => {
  test('doubles its ceiling per retry up to the cap', () => {
    const top = () => 0.999999;
    expect(backoffDelay(1, 50, 2000, top)).toBe(49);
    expect(backoffDelay(2, 50, 2000, top)).toBe(99);
    expect(backoffDelay(4, 50, 2000, top)).toBe(399);
    expect(backoffDelay(20, 50, 2000, top)).toBe(1999);
  });

  test('full jitter: anywhere from 0', () => {
    expect(backoffDelay(3, 50, 2000, () => 0)).toBe(0);
  });
});

describe('abortableDelay', () => {
  test('resolves after the delay', async () => {
    await abortableDelay(1, new AbortController().signal);
  });

  test('rejects with the abort reason, at once or when aborted', async () => {
    const done = new AbortController();
    done.abort('gone');
    await expect(abortableDelay(10_000, done.signal)).rejects.toBe('gone');
    const later = new AbortController();
    const waiting = abortableDelay(10_000, later.signal);
    later.abort('timeout');
    await expect(waiting).rejects.toBe('timeout');
  });
});
