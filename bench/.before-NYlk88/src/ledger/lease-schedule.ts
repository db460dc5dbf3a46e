/**
 * Lease deadlines plus the single timer that wakes the ledger when the earliest one passes.
 * One timer for all leases, not one per record. A timer armed too early (the earliest record ended
 * or was renewed, or every record ended) is left to fire, find nothing due and re-arm if needed:
 * clearing and re-arming it on every change made an idle reserve+release cycle 1.6× slower.
 */
import { DeadlineHeap, type HeapItem } from '../core/heap.ts';
import type { LeaseClock } from '../core/lease-clock.ts';

export class LeaseSchedule<T extends HeapItem> {
  readonly #clock: LeaseClock;
  readonly #onWake: () => void;
  readonly #heap = new DeadlineHeap<T>();
  #timer: unknown = undefined;
  #timerDue = Infinity;

  /** `onWake` runs when the timer fires; it should end whatever `due()` returns. */
  constructor(clock: LeaseClock, onWake: () => void) {
    this.#clock = clock;
    this.#onWake = onWake;
  }

  get size(): number {
    return this.#heap.size;
  }

  /**
   * Starts or moves an item's lease to end at `deadline`.
   * @example schedule.set(record, clock.now() + 30_000);
   */
  set(item: T, deadline: number): void {
    this.#heap.update(item, deadline);
    this.#arm();
  }

  /**
   * Forgets an item's lease.
   * @example schedule.remove(record);
   */
  remove(item: T): void {
    this.#heap.remove(item);
    this.#arm();
  }

  /**
   * The earliest item whose deadline has passed, if any.
   * @example for (let r = schedule.due(); r; r = schedule.due()) expire(r);
   */
  due(): T | undefined {
    const top = this.#heap.peek();
    return top !== undefined && top.deadline <= this.#clock.now() ? top : undefined;
  }

  /**
   * Disarms the timer (items stay; a later `set` re-arms it); for shutdown.
   * @example schedule.stop();
   */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#timerDue = Infinity;
  }

  #arm(): void {
    const top = this.#heap.peek();
    if (top === undefined) return;
    if (top.deadline >= this.#timerDue) return;
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timerDue = top.deadline;
    this.#timer = this.#clock.setTimer(() => {
      this.#timer = undefined;
      this.#timerDue = Infinity;
      this.#onWake();
      this.#arm();
    }, top.deadline - this.#clock.now());
  }
}
