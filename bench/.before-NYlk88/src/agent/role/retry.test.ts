import { expect, test } from 'bun:test';
import { ManualClock } from '../../core/lease-clock.ts';
import { RETRY_BASE_MS, RETRY_CAP_MS, retryDelay, retryPolicy, RetryTimer } from './retry.ts';

test('the wait doubles from the base up to the cap, jittered within the upper half', () => {
  const policy = retryPolicy();
  expect(policy).toEqual({ baseMs: RETRY_BASE_MS, capMs: RETRY_CAP_MS });
  expect([1, 2, 3, 4, 5, 6, 7, 50].map((n) => retryDelay(n, policy, () => 1))).toEqual([200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
  expect([1, 2, 6].map((n) => retryDelay(n, policy, () => 0))).toEqual([100, 200, 2500]);
  for (let i = 0; i < 200; i++) {
    const d = retryDelay(3, policy);
    expect(d).toBeGreaterThanOrEqual(400);
    expect(d).toBeLessThanOrEqual(800);
  }
});

test('policies are checked once with uniform messages', () => {
  expect(retryPolicy({ baseMs: 50 })).toEqual({ baseMs: 50, capMs: RETRY_CAP_MS });
  expect(retryPolicy({ baseMs: 9000 })).toEqual({ baseMs: 9000, capMs: 9000 });
  expect(() => retryPolicy({ baseMs: 0 })).toThrow('retry.baseMs must be a positive number');
  expect(() => retryPolicy({ baseMs: Number.NaN })).toThrow('retry.baseMs');
  expect(() => retryPolicy({ baseMs: 100, capMs: 50 })).toThrow('retry.capMs must be a number ≥ retry.baseMs');
});

test('the retry timer keeps one timer armed for the earliest due time it is given', () => {
  const clock = new ManualClock(0);
  let fired = 0;
  const timer = new RetryTimer(clock, () => fired++);
  timer.set(500);
  timer.set(800); // later: the armed one fires first and the caller re-arms then
  expect([clock.pendingTimers, clock.nextTimerDue]).toEqual([1, 500]);
  timer.set(300);
  expect([clock.pendingTimers, clock.nextTimerDue]).toEqual([1, 300]);
  clock.advance(300);
  expect(fired).toBe(1);
  timer.set(400);
  timer.set(undefined);
  expect(clock.pendingTimers).toBe(0);
  clock.advance(1000);
  expect(fired).toBe(1);
});
