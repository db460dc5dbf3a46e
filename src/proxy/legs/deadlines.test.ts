import { describe, expect, test } from 'bun:test';
import { Deadlines, type Deadline } from './deadlines.ts';

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

describe('Deadlines let go of what their callbacks hold', () => {
  /**
   * Arms a deadline whose callback alone holds an object, as an exchange's clock holds its request;
   * the WeakRef tells whether the object is still held. Made here, so no scope of the test holds it.
   */
  function armHolding(
    deadlines: Deadlines,
    ms: number,
    fired?: { count: number },
  ): { deadline: Deadline | undefined; held: WeakRef<object> } {
    const request = { body: new Uint8Array(1024) };
    const deadline = deadlines.arm(ms, () => {
      request.body.fill(1);
      if (fired !== undefined) fired.count++;
    });
    return { deadline, held: new WeakRef(request) };
  }

  /** A full collection a turn later: a WeakRef made in this turn keeps its object until the turn ends. */
  async function collected(held: WeakRef<object>): Promise<boolean> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    Bun.gc(true);
    return held.deref() === undefined;
  }

  test('a cancelled deadline, behind a live one of its lane', async () => {
    const deadlines = new Deadlines();
    const live = deadlines.arm(60_000, () => {});
    const { deadline, held } = armHolding(deadlines, 60_000);
    deadlines.cancel(deadline);
    expect(await collected(held)).toBe(true);
    expect(deadlines.size).toBe(1);
    deadlines.cancel(live);
  });

  test('a cancelled deadline ahead of a live one, and one of a lane of its own', async () => {
    const deadlines = new Deadlines();
    const first = armHolding(deadlines, 60_000);
    deadlines.cancel(first.deadline);
    const live = deadlines.arm(60_000, () => {});
    const other = armHolding(deadlines, 30_000);
    deadlines.cancel(other.deadline);
    expect(await collected(first.held)).toBe(true);
    expect(await collected(other.held)).toBe(true);
    deadlines.cancel(live);
  });

  test('a deadline that fired', async () => {
    let now = 0;
    const deadlines = new Deadlines(() => now);
    const live = deadlines.arm(60_000, () => {});
    const fired = { count: 0 };
    const { held } = armHolding(deadlines, 10, fired);
    now = 20;
    await new Promise<void>((resolve) => deadlines.arm(0, resolve));
    expect(fired.count).toBe(1);
    expect(await collected(held)).toBe(true);
    deadlines.cancel(live);
  });

  test('compaction keeps the live ones in order, and a cancel after it still empties the right slot', async () => {
    let now = 0;
    const deadlines = new Deadlines(() => now);
    const fired: number[] = [];
    const kept = [deadlines.arm(20, () => fired.push(0))];
    for (let i = 0; i < 300; i++) deadlines.cancel(deadlines.arm(20, () => fired.push(-1)));
    kept.push(
      deadlines.arm(20, () => fired.push(1)),
      deadlines.arm(20, () => fired.push(2)),
    );
    for (let i = 0; i < 300; i++) deadlines.cancel(deadlines.arm(20, () => fired.push(-1)));
    deadlines.cancel(kept[1]);
    const { deadline, held } = armHolding(deadlines, 20);
    deadlines.cancel(deadline);
    expect(deadlines.size).toBe(2);
    expect(await collected(held)).toBe(true);
    now = 100;
    await new Promise<void>((resolve) => deadlines.arm(0, resolve));
    expect(fired).toEqual([0, 2]);
  });
});
