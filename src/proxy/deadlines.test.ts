import { describe, expect, test } from 'bun:test';
import { Deadlines } from './deadlines.ts';

/** Waits, with a bound, until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(condition()).toBe(true);
}

describe('Deadlines', () => {
  test('fires each deadline once, the earliest first, ties in the order they were armed', async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    deadlines.arm(30, () => fired.push('late'));
    deadlines.arm(5, () => fired.push('a'));
    deadlines.arm(5, () => fired.push('b'));
    deadlines.arm(Number.POSITIVE_INFINITY, () => fired.push('never'));
    expect(deadlines.size).toBe(3);
    await until(() => fired.length === 3);
    expect(fired).toEqual(['a', 'b', 'late']);
    expect(deadlines.size).toBe(0);
  });

  test('a cancelled deadline never fires; cancelling twice or undefined is a no-op', async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    const first = deadlines.arm(5, () => fired.push('cancelled'));
    deadlines.arm(15, () => fired.push('kept'));
    deadlines.cancel(first);
    deadlines.cancel(first);
    deadlines.cancel(undefined);
    await until(() => fired.length === 1);
    expect(fired).toEqual(['kept']);
  });

  test('an earlier deadline armed after a later one still fires first', async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    deadlines.arm(200, () => fired.push('later'));
    deadlines.arm(1, () => fired.push('sooner'));
    await until(() => fired.length === 1);
    expect(fired).toEqual(['sooner']);
    await until(() => fired.length === 2);
  });

  test('a deadline whose callback throws does not stop the others', async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => errors.push(args);
    try {
      deadlines.arm(1, () => {
        throw new Error('boom');
      });
      deadlines.arm(1, () => fired.push('next'));
      await until(() => fired.length === 1);
      expect(errors).toHaveLength(1);
    } finally {
      console.error = original;
    }
  });
});

describe('Deadlines on a clock the test moves', () => {
  /** Deadlines whose timer the test fires: the clock is moved, then the due ones fired through a zero-length arm. */
  function manual() {
    let now = 0;
    const deadlines = new Deadlines(() => now);
    return { deadlines, advance: (ms: number) => (now += ms) };
  }

  test('lanes of different lengths interleave by due time; equal times by arming order', async () => {
    const { deadlines, advance } = manual();
    const fired: string[] = [];
    deadlines.arm(30, () => fired.push('30@0'));
    deadlines.arm(10, () => fired.push('10@0'));
    advance(5);
    deadlines.arm(10, () => fired.push('10@5'));
    deadlines.arm(25, () => fired.push('25@5'));
    advance(100);
    // A zero-length deadline brings the shared timer forward; by then everything is due.
    const done = new Promise<void>((resolve) => deadlines.arm(0, resolve));
    await done;
    expect(fired).toEqual(['10@0', '10@5', '30@0', '25@5']);
    expect(deadlines.size).toBe(0);
  });

  test('thousands cancelled behind a live head are dropped, and the live ones still fire in order', async () => {
    const { deadlines, advance } = manual();
    const fired: number[] = [];
    deadlines.arm(20, () => fired.push(-1));
    for (let i = 0; i < 5000; i++) deadlines.cancel(deadlines.arm(20, () => fired.push(i)));
    deadlines.arm(20, () => fired.push(5000));
    expect(deadlines.size).toBe(2);
    advance(2000);
    await new Promise<void>((resolve) => deadlines.arm(0, resolve));
    expect(fired).toEqual([-1, 5000]);
  });

  test('a deadline cancelled after it fired, or twice, changes nothing', async () => {
    const { deadlines, advance } = manual();
    let fired = 0;
    const d = deadlines.arm(1, () => fired++);
    const other = deadlines.arm(50, () => fired++);
    advance(10);
    await new Promise<void>((resolve) => deadlines.arm(0, resolve));
    expect(fired).toBe(1);
    deadlines.cancel(d);
    deadlines.cancel(d);
    expect(deadlines.size).toBe(1);
    deadlines.cancel(other);
    expect(deadlines.size).toBe(0);
  });
});
