/**
 * The time source of the ledger's leases: a clock plus one-shot timers. Production uses the system
 * clock; tests use `ManualClock` and move time forward explicitly, so lease expiry is tested
 * deterministically and without sleeping.
 */
import { INT32_MAX } from './limits.ts';

/** Milliseconds since the epoch, and one-shot timers measured against the same clock. */
export interface LeaseClock {
  now(): number;
  /** Calls `callback` once, `delayMs` from now; returns a handle for `clearTimer`. */
  setTimer(callback: () => void, delayMs: number): unknown;
  clearTimer(handle: unknown): void;
}

/** Largest delay `setTimeout` honours; longer delays would fire at once, so timers are capped and re-armed. */
export const MAX_TIMER_DELAY_MS = INT32_MAX;

/** Read once: the origin does not change, and the getter was a visible part of each reading. */
const TIME_ORIGIN = performance.timeOrigin;

/**
 * The process clock: epoch-based but monotonic (`performance.timeOrigin + performance.now()`), so a
 * wall-clock step cannot expire every lease at once. Timers are unref'd: pending leases never keep
 * the process alive.
 * @example const ledger = new KvLedger({ cluster, clock: systemClock });
 */
export const systemClock: LeaseClock = {
  now: () => TIME_ORIGIN + performance.now(),
  setTimer(callback, delayMs) {
    const handle = setTimeout(callback, Math.min(Math.max(0, delayMs), MAX_TIMER_DELAY_MS));
    (handle as { unref?: () => void }).unref?.();
    return handle;
  },
  clearTimer(handle) {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};

interface ManualTimer {
  readonly due: number;
  readonly seq: number;
  readonly callback: () => void;
}

/**
 * A clock that only moves when told to; `advance` runs the timers that fall due, in order.
 * @example const clock = new ManualClock(0); const ledger = new KvLedger({ cluster, clock }); clock.advance(30_000);
 */
export class ManualClock implements LeaseClock {
  #now: number;
  #seq = 0;
  readonly #timers = new Map<number, ManualTimer>();

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimer(callback: () => void, delayMs: number): unknown {
    const seq = this.#seq++;
    this.#timers.set(seq, { due: this.#now + Math.max(0, delayMs), seq, callback });
    return seq;
  }

  clearTimer(handle: unknown): void {
    if (typeof handle === 'number') this.#timers.delete(handle);
  }

  /** Number of timers not yet fired or cleared (lets tests check that nothing is left armed). */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Due time of the next timer to fire, if any (lets tests check a lease is always covered). */
  get nextTimerDue(): number | undefined {
    let due: number | undefined;
    for (const timer of this.#timers.values()) if (due === undefined || timer.due < due) due = timer.due;
    return due;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way at its own due time.
   * @example clock.advance(1_000);
   */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('advance: ms must be a non-negative number');
    const target = this.#now + ms;
    for (;;) {
      const next = this.#earliest(target);
      if (next === undefined) break;
      this.#timers.delete(next.seq);
      this.#now = Math.max(this.#now, next.due);
      next.callback();
    }
    this.#now = target;
  }

  #earliest(limit: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const timer of this.#timers.values()) {
      if (timer.due > limit) continue;
      if (best === undefined || timer.due < best.due || (timer.due === best.due && timer.seq < best.seq)) best = timer;
    }
    return best;
  }
}
