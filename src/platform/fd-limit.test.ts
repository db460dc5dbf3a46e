import { expect, test } from 'bun:test';
import { defaultIdleCap, IDLE_CAP_CEILING, softFdLimit } from './fd-limit.ts';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            400                  524288               files
Max locked memory         8388608              8388608              bytes`;

test('the soft limit on open files is read from /proc/self/limits; unreadable or unlimited is undefined', () => {
  expect(softFdLimit(LIMITS)).toBe(400);
  expect(softFdLimit(LIMITS.replace('400 ', 'unlimited '))).toBeUndefined();
  expect(softFdLimit('')).toBeUndefined();
  // This process's own, on Linux: a positive number.
  if (process.platform === 'linux') expect(softFdLimit()).toBeGreaterThan(0);
});

test('idle connections default to a quarter of the limit, at most the ceiling, at least one', () => {
  expect(defaultIdleCap(400)).toBe(100);
  expect(defaultIdleCap(1 << 20)).toBe(IDLE_CAP_CEILING);
  expect(defaultIdleCap(2)).toBe(1);
  expect(defaultIdleCap(undefined)).toBe(IDLE_CAP_CEILING);
});
