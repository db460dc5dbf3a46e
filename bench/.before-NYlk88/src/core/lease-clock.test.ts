import { expect, test } from 'bun:test';
import { ManualClock, MAX_TIMER_DELAY_MS, systemClock } from './lease-clock.ts';

test('ManualClock fires due timers in due order, each at its own time, and skips cleared ones', () => {
  const clock = new ManualClock(100);
  const fired: [string, number][] = [];
  clock.setTimer(() => fired.push(['b', clock.now()]), 50);
  clock.setTimer(() => fired.push(['a', clock.now()]), 10);
  const cleared = clock.setTimer(() => fired.push(['x', clock.now()]), 20);
  clock.setTimer(() => fired.push(['late', clock.now()]), 500);
  clock.clearTimer(cleared);
  clock.advance(60);
  expect(fired).toEqual([
    ['a', 110],
    ['b', 150],
  ]);
  expect(clock.now()).toBe(160);
  expect(clock.pendingTimers).toBe(1);
});

test('ManualClock runs timers armed by a firing timer when they fall due in the same advance', () => {
  const clock = new ManualClock(0);
  const fired: number[] = [];
  clock.setTimer(() => {
    fired.push(clock.now());
    clock.setTimer(() => fired.push(clock.now()), 5);
  }, 5);
  clock.advance(20);
  expect(fired).toEqual([5, 10]);
  expect(clock.pendingTimers).toBe(0);
});

test('ManualClock refuses to go backwards', () => {
  const clock = new ManualClock(0);
  expect(() => clock.advance(-1)).toThrow('advance: ms must be a non-negative number');
  expect(() => clock.advance(Number.NaN)).toThrow('advance: ms must be a non-negative number');
});

test('systemClock is epoch-based and its timers fire', async () => {
  expect(Math.abs(systemClock.now() - Date.now())).toBeLessThan(60_000);
  const fired = await new Promise<boolean>((resolve) => {
    systemClock.setTimer(() => resolve(true), 1);
  });
  expect(fired).toBe(true);
});

test('systemClock clears timers and caps delays it cannot honour', async () => {
  const fired: string[] = [];
  const cleared = systemClock.setTimer(() => fired.push('cleared'), 0);
  systemClock.clearTimer(cleared);
  // Uncapped, setTimeout would turn this delay into 1 ms and fire it before the 2 ms marker below.
  const far = systemClock.setTimer(() => fired.push('far'), MAX_TIMER_DELAY_MS * 4);
  await new Promise<void>((resolve) => systemClock.setTimer(resolve, 2));
  systemClock.clearTimer(far);
  expect(fired).toEqual([]);
});
