/**
 * The proxy's request clocks (first token, whole request, prefill attempt) on one timer. Each
 * request used to arm two or three timers of its own and clear them when it ended, almost always
 * long before they were due: timer creation and cancellation were a visible part of the
 * per-request cost. Here a deadline is an entry in one indexed heap (core/heap.ts), cancelled in
 * O(log n) with no timer call, and a single timer is armed for the earliest deadline.
 */
import { IndexedHeap, type Indexed } from '../core/heap.ts';

/** One armed deadline; pass it back to cancel(). */
export interface Deadline extends Indexed {
  readonly at: number;
  readonly seq: number;
  readonly fire: () => void;
}

export class Deadlines {
  // Equal deadlines fire in the order they were armed, as separate timers did.
  readonly #heap = new IndexedHeap<Deadline>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  readonly #now: () => number;
  #seq = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer is due (Infinity when none is armed). */
  #timerAt = Infinity;

  /**
   * @example const deadlines = new Deadlines();
   */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** The clock deadlines are measured on (performance.now() unless another was given). */
  now(): number {
    return this.#now();
  }

  /** Deadlines armed and not yet fired or cancelled. */
  get size(): number {
    return this.#heap.size;
  }

  /**
   * Calls `fire` once `ms` have passed, unless cancelled first; a non-finite `ms` arms nothing.
   * @example const d = deadlines.arm(30_000, () => exchange.abort('infer_timeout'));
   */
  arm(ms: number, fire: () => void): Deadline | undefined {
    if (!Number.isFinite(ms)) return undefined;
    const deadline: Deadline = { at: this.#now() + ms, seq: this.#seq++, fire, heapIndex: -1 };
    this.#heap.push(deadline);
    if (deadline.at < this.#timerAt) this.#schedule();
    return deadline;
  }

  /**
   * Cancels a deadline; a no-op for one already fired or cancelled, or undefined.
   * @example deadlines.cancel(d);
   */
  cancel(deadline: Deadline | undefined): void {
    if (deadline === undefined) return;
    this.#heap.remove(deadline);
    // Nothing left: no timer may keep the process alive. Otherwise the timer stays and, if it
    // wakes for nothing, re-arms for the next deadline.
    if (this.#heap.size === 0) this.#clearTimer();
  }

  #schedule(): void {
    this.#clearTimer();
    const first = this.#heap.peek();
    if (first === undefined) return;
    this.#timerAt = first.at;
    this.#timer = setTimeout(() => this.#fireDue(), Math.max(0, first.at - this.#now()));
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #fireDue(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.#now();
    for (let first = this.#heap.peek(); first !== undefined && first.at <= now; first = this.#heap.peek()) {
      this.#heap.remove(first);
      try {
        first.fire();
      } catch (err) {
        console.error('pdlink: a request deadline failed', err);
      }
    }
    this.#schedule();
  }
}

/** The process's request clocks: every exchange arms its deadlines here. */
export const requestDeadlines = new Deadlines();
