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
