/**
 * How long a desired link that failed waits before the role driver tries it again: exponential
 * backoff with jitter, capped, so the links of a dead prefill instance are retried often at first
 * and then about every `capMs`, and links that failed together do not all retry in the same tick.
 */
import { optionErrors } from '../../core/errors.ts';
import type { LeaseClock } from '../../core/lease-clock.ts';

/** First wait after a failure. */
export const RETRY_BASE_MS = 200;
/** Longest wait between two attempts of one link. */
export const RETRY_CAP_MS = 5000;

export interface RetryPolicy {
  readonly baseMs: number;
  readonly capMs: number;
}

/**
 * Checks a policy once, with uniform messages; returns it with defaults filled in.
 * @example const policy = retryPolicy({ baseMs: 100 });
 */
export function retryPolicy(options: Partial<RetryPolicy> = {}): RetryPolicy {
  const baseMs = options.baseMs ?? RETRY_BASE_MS;
  const capMs = options.capMs ?? Math.max(RETRY_CAP_MS, baseMs);
  if (!Number.isFinite(baseMs) || baseMs <= 0) throw optionErrors.positiveNumber('retry.baseMs');
  if (!Number.isFinite(capMs) || capMs < baseMs) throw optionErrors.notBelow('retry.capMs', 'retry.baseMs');
  return { baseMs, capMs };
}

/**
 * The wait before attempt `failures + 1` after `failures` consecutive failures ("equal jitter"):
 * uniform in [c/2, c] where c = min(capMs, baseMs·2^(failures−1)). Half the ceiling is kept so a
 * retry never comes back immediately, the other half is random so retries spread out.
 * @example retryDelay(1, { baseMs: 200, capMs: 5000 }) // in [100, 200]
 */
export function retryDelay(failures: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** One timer, kept armed for the earliest due time it is given. */
export class RetryTimer {
  readonly #clock: LeaseClock;
  readonly #fire: () => void;
  #armed: { handle: unknown; due: number } | undefined;

  constructor(clock: LeaseClock, fire: () => void) {
    this.#clock = clock;
    this.#fire = fire;
  }

  /**
   * Arms the timer for `due` unless it already fires no later; `undefined` disarms it.
   * @example timer.set(Math.min(...dueTimes));
   */
  set(due: number | undefined): void {
    if (due === undefined) return this.clear();
    if (this.#armed !== undefined && this.#armed.due <= due) return;
    this.clear();
    const handle = this.#clock.setTimer(() => {
      this.#armed = undefined;
      this.#fire();
    }, due - this.#clock.now());
    this.#armed = { handle, due };
  }

  clear(): void {
    if (this.#armed !== undefined) this.#clock.clearTimer(this.#armed.handle);
    this.#armed = undefined;
  }
}
