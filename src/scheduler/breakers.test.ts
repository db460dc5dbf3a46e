import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../core/errors.ts';
import { CircuitBreakers, type CircuitEvent, createBreakers, createHealth } from './breakers.ts';

function setup(options: Parameters<typeof createHealth>[0] = {}) {
  const clock = { now: 1_000 };
  const health = createHealth({ clock: () => clock.now, ...options });
  const events: CircuitEvent[] = [];
  health.onChange((e) => events.push(e));
  return { clock, health, events };
}

const fail = (health: ReturnType<typeof createHealth>, id: number, times: number) => {
  for (let i = 0; i < times; i++) health.recordFailure(id);
};

describe('CircuitBreakers', () => {
  test('an instance never reported on is closed and admissible', () => {
    const { health } = setup();
    expect(health.state(9)).toBe('closed');
    expect(health.admissible(9)).toBe(true);
    expect([...health.tripped()]).toEqual([]);
  });

  test('opens after the default 5 consecutive failures, not before', () => {
    const { health, events } = setup();
    fail(health, 1, 4);
    expect(health.state(1)).toBe('closed');
    expect(events).toEqual([]);
    health.recordFailure(1);
    expect(health.state(1)).toBe('open');
    expect(health.admissible(1)).toBe(false);
    expect(events).toEqual([{ id: 1, state: 'open', previous: 'closed', admissible: false }]);
  });

  test('a success resets the run of failures', () => {
    const { health } = setup();
    fail(health, 1, 4);
    health.recordSuccess(1);
    fail(health, 1, 4);
    expect(health.state(1)).toBe('closed');
    health.recordFailure(1);
    expect(health.state(1)).toBe('open');
  });

  test('the clock is read only while some circuit waits on time', () => {
    let reads = 0;
    let now = 1_000;
    const health = createBreakers({
      failureThreshold: 1,
      cooldownMs: 100,
      clock: () => {
        reads++;
        return now;
      },
    });
    health.poll();
    expect(health.admissible(1)).toBe(true);
    health.relisted(() => true);
    expect(reads).toBe(0);
    health.recordFailure(1); // opens: its cool-down ends at 1,100
    expect(reads).toBeGreaterThan(0);
    reads = 0;
    now = 1_100;
    health.poll();
    expect(reads).toBe(1);
    expect(health.state(1)).toBe('half_open');
    // Half-open with no trial running: nothing waits on time any more.
    reads = 0;
    health.poll();
    expect(reads).toBe(0);
  });

  test('open turns half-open after the cool-down, read lazily from the clock', () => {
    const { clock, health, events } = setup({ cooldownMs: 30_000 });
    fail(health, 1, 5);
    clock.now += 29_999;
    expect(health.state(1)).toBe('open');
    clock.now += 1;
    expect(health.state(1)).toBe('half_open');
    expect(health.admissible(1)).toBe(true);
    expect(events.at(-1)).toEqual({ id: 1, state: 'half_open', previous: 'open', admissible: true });
  });

  test('poll() emits due transitions without a query', () => {
    const { clock, health, events } = setup({ failureThreshold: 1, cooldownMs: 10 });
    health.recordFailure(1);
    health.recordFailure(2);
    clock.now += 10;
    health.poll();
    expect(
      events
        .filter((e) => e.state === 'half_open')
        .map((e) => e.id)
        .sort(),
    ).toEqual([1, 2]);
  });

  test('half-open admits one trial at a time', () => {
    const { clock, health, events } = setup({ failureThreshold: 1, cooldownMs: 10 });
    health.recordFailure(1);
    clock.now += 10;
    health.admit(1);
    expect(health.state(1)).toBe('half_open');
    expect(health.admissible(1)).toBe(false);
    expect(events.at(-1)).toEqual({ id: 1, state: 'half_open', previous: 'half_open', admissible: false });
    health.admit(1); // already running: no second trial, no event
    expect(events.filter((e) => !e.admissible && e.state === 'half_open')).toHaveLength(1);
  });

  test('closes after the default 2 successful trials', () => {
    const { clock, health, events } = setup({ failureThreshold: 1, cooldownMs: 10 });
    health.recordFailure(1);
    clock.now += 10;
    health.admit(1);
    health.recordSuccess(1);
    expect(health.state(1)).toBe('half_open');
    expect(health.admissible(1)).toBe(true);
    health.admit(1);
    health.recordSuccess(1);
    expect(health.state(1)).toBe('closed');
    expect(events.at(-1)).toEqual({ id: 1, state: 'closed', previous: 'half_open', admissible: true });
    // Closed again means a fresh run: one failure reopens (threshold 1), as before.
    health.recordFailure(1);
    expect(health.state(1)).toBe('open');
  });

  test('a failed trial reopens for a new cool-down', () => {
    const { clock, health } = setup({ failureThreshold: 2, cooldownMs: 100 });
    fail(health, 1, 2);
    clock.now += 100;
    health.admit(1);
    health.recordFailure(1);
    expect(health.state(1)).toBe('open');
    clock.now += 99;
    expect(health.state(1)).toBe('open');
    clock.now += 1;
    expect(health.state(1)).toBe('half_open');
  });

  test('a trial whose outcome never comes stops blocking after the trial timeout', () => {
    const { clock, health } = setup({ failureThreshold: 1, cooldownMs: 10, trialTimeoutMs: 50 });
    health.recordFailure(1);
    clock.now += 10;
    health.admit(1);
    clock.now += 49;
    expect(health.admissible(1)).toBe(false);
    clock.now += 1;
    expect(health.admissible(1)).toBe(true);
    expect(health.state(1)).toBe('half_open');
  });

  test('outcomes reported while open change nothing', () => {
    const { health, events } = setup({ failureThreshold: 1 });
    health.recordFailure(1);
    const before = events.length;
    health.recordSuccess(1);
    health.recordFailure(1);
    expect(health.state(1)).toBe('open');
    expect(events).toHaveLength(before);
  });

  test('admit and success on a closed instance are no-ops', () => {
    const { health, events } = setup();
    health.admit(1);
    health.recordSuccess(1);
    expect(health.state(1)).toBe('closed');
    expect(events).toEqual([]);
  });

  test('forget() brings an instance back closed', () => {
    const { health } = setup({ failureThreshold: 1 });
    health.recordFailure(1);
    expect([...health.tripped()]).toEqual([{ id: 1, state: 'open' }]);
    health.forget(1);
    expect(health.state(1)).toBe('closed');
  });

  test('a throwing listener is logged and does not stop the others', () => {
    const { health } = setup({ failureThreshold: 1 });
    const seen: number[] = [];
    const originalError = console.error;
    const logged: unknown[] = [];
    console.error = (...args: unknown[]) => logged.push(args);
    try {
      health.onChange(() => {
        throw new Error('boom');
      });
      const off = health.onChange((e) => seen.push(e.id));
      health.recordFailure(4);
      off();
      health.recordFailure(5);
    } finally {
      console.error = originalError;
    }
    expect(seen).toEqual([4]);
    expect(logged).toHaveLength(2);
  });

  test('rejects bad options with the field named', () => {
    const cases: [Parameters<typeof createHealth>[0], string][] = [
      [{ failureThreshold: 0 }, 'health.failureThreshold'],
      [{ failureThreshold: 1.5 }, 'health.failureThreshold'],
      [{ successThreshold: -1 }, 'health.successThreshold'],
      [{ cooldownMs: 0 }, 'health.cooldownMs'],
      [{ cooldownMs: Number.NaN }, 'health.cooldownMs'],
      [{ trialTimeoutMs: Number.POSITIVE_INFINITY }, 'health.trialTimeoutMs'],
      [{ clock: 5 as unknown as () => number }, 'health.clock'],
    ];
    for (const [options, path] of cases) {
      let caught: unknown;
      try {
        createHealth(options);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(PdlinkError);
      expect((caught as PdlinkError).code).toBe('bad_request');
      expect((caught as PdlinkError).issues[0]?.path).toBe(path);
    }
  });

  test('relisted: an open circuit the refresh lists turns half-open now, one trial at a time', () => {
    const { health, events } = setup({ failureThreshold: 1, cooldownMs: 30_000 });
    health.recordFailure(1);
    health.relisted(() => true);
    expect(health.state(1)).toBe('half_open');
    expect(events.at(-1)).toEqual({ id: 1, state: 'half_open', previous: 'open', admissible: true });
    health.admit(1);
    health.relisted(() => true);
    expect(health.admissible(1)).toBe(false); // the running trial is not doubled
    health.recordFailure(1);
    expect(health.state(1)).toBe('open');
  });

  test('relisted: what is kept about an unlisted instance is dropped, except an open circuit', () => {
    const { clock, health } = setup({ failureThreshold: 2, cooldownMs: 100 });
    health.recordFailure(1); // a run of one failure
    fail(health, 2, 2); // open
    health.relisted(() => false);
    expect([...health.tripped()]).toEqual([{ id: 2, state: 'open' }]);
    fail(health, 1, 2);
    expect(health.state(1)).toBe('open'); // the run started again from zero: two more were needed
    clock.now += 100;
    health.relisted(() => false);
    expect([...health.tripped()]).toEqual([]);
  });

  test('trialEarly: the open circuit ending first turns half-open; none while a trial runs', () => {
    const { clock, health } = setup({ failureThreshold: 1, cooldownMs: 100 });
    health.recordFailure(1);
    clock.now += 10;
    health.recordFailure(2);
    expect(health.trialEarly([3, 2, 1])).toBe(1);
    expect(health.state(1)).toBe('half_open');
    expect(health.state(2)).toBe('open');
    expect(health.trialEarly([1, 2])).toBeUndefined();
    expect(health.trialEarly([2])).toBe(2);
    expect(health.trialEarly([])).toBeUndefined();
    expect(health.trialEarly([7])).toBeUndefined();
  });
});

test('createHealth, the earlier name of createBreakers, still makes circuit breakers', () => {
  expect(createHealth).toBe(createBreakers);
  expect(createHealth()).toBeInstanceOf(CircuitBreakers);
});

test('admissibleAsPolled answers as of the last poll; admissible polls first', () => {
  const clock = { now: 0 };
  const breakers = createBreakers({ clock: () => clock.now, failureThreshold: 1, cooldownMs: 100 });
  breakers.recordFailure(3);
  expect(breakers.admissibleAsPolled(3)).toBe(false);
  expect(breakers.admissibleAsPolled(4)).toBe(true);
  clock.now = 100;
  expect(breakers.admissibleAsPolled(3)).toBe(false);
  breakers.poll();
  expect(breakers.admissibleAsPolled(3)).toBe(true);
  expect(breakers.admissible(3)).toBe(true);
});
