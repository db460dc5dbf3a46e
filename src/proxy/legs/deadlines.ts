/**
 * The proxy's request clocks (first token, whole request, prefill attempt, each leg's engine
 * silence) on one timer. Each request used to arm timers of its own and clear them when it ended,
 * almost always long before they were due: timer creation and cancellation were a visible part of
 * the per-request cost.
 *
 * The proxy arms deadlines of a handful of lengths (its configured timeouts), and deadlines of one
 * length fall due in the order they were armed, since the clock only moves forward. So each length
 * has a lane, a queue in arming order: arming appends, cancelling empties the entry's slot, and
 * only the head of each lane can be next. Both are O(1), where an ordered heap paid O(log n) on
 * each. A lane moves its head past emptied slots, and compacts itself when they pile up behind a
 * live one (a long request holding the head of a lane of long deadlines).
 *
 * A cancelled deadline lets go of its callback and of its slot at once. Its callback holds the whole
 * request (the exchange, the client's request, the legs), and a lane's queue lives on across many
 * requests: the JS engine's minor collections treat everything an old array points at as live, so
 * every request that ended since the last one was kept, moved into the old generation, and freed
 * only by a major collection.
 */

/** One armed deadline; pass it back to cancel(). */
export interface Deadline {
  /** When it falls due, on the clock of its Deadlines. */
  readonly at: number;
}

interface Entry extends Deadline {
  readonly seq: number;
  /** What runs when it falls due; dropped once it is cancelled or has fired. */
  fire: (() => void) | undefined;
  /** Its lane while armed; undefined once cancelled or fired. */
  lane: Lane | undefined;
  /** Its slot in the lane's queue. */
  index: number;
}

/** The deadlines of one length, in arming order; a slot is emptied when its deadline is cancelled or fires. */
interface Lane {
  readonly ms: number;
  queue: (Entry | undefined)[];
  head: number;
  live: number;
}

/** A lane compacts when it holds more than this many cancelled entries beyond twice its live ones. */
const COMPACT_SLACK = 64;

export class Deadlines {
  readonly #lanes = new Map<number, Lane>();
  readonly #now: () => number;
  #seq = 0;
  #size = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer is due (Infinity when none is armed). */
  #timerAt = Infinity;

  /**
   * `now` must not go backwards (deadlines of one length are kept in arming order).
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
    return this.#size;
  }

  /**
   * Calls `fire` once `ms` have passed, unless cancelled first; a non-finite `ms` arms nothing.
   * @example const d = deadlines.arm(30_000, () => exchange.abort('infer_timeout'));
   */
  arm(ms: number, fire: () => void): Deadline | undefined {
    if (!Number.isFinite(ms)) return undefined;
    let lane = this.#lanes.get(ms);
    if (lane === undefined) this.#lanes.set(ms, (lane = { ms, queue: [], head: 0, live: 0 }));
    const entry: Entry = { at: this.#now() + ms, seq: this.#seq++, fire, lane, index: lane.queue.length };
    lane.queue.push(entry);
    lane.live++;
    this.#size++;
    if (entry.at < this.#timerAt) this.#schedule();
    return entry;
  }

  /**
   * Cancels a deadline; a no-op for one already fired or cancelled, or undefined.
   * @example deadlines.cancel(d);
   */
  cancel(deadline: Deadline | undefined): void {
    if (deadline === undefined) return;
    const entry = deadline as Entry;
    const lane = entry.lane;
    if (lane === undefined) return;
    entry.lane = undefined;
    entry.fire = undefined;
    lane.queue[entry.index] = undefined;
    lane.live--;
    this.#size--;
    // Nothing left: no timer may keep the process alive. Otherwise the timer stays and, if it
    // wakes for nothing, re-arms for the next deadline.
    if (this.#size === 0) {
      this.#clearTimer();
      this.#lanes.clear();
      return;
    }
    if (lane.queue.length - lane.head - lane.live > 2 * lane.live + COMPACT_SLACK) this.#compact(lane);
  }

  /** The lane's earliest live entry, moving its head past the emptied slots. */
  #first(lane: Lane): Entry | undefined {
    const queue = lane.queue;
    while (lane.head < queue.length) {
      const entry = queue[lane.head];
      if (entry !== undefined) return entry;
      lane.head++;
    }
    // An empty lane goes: a silence clock re-arms for what is left of its wait, any length.
    this.#lanes.delete(lane.ms);
    return undefined;
  }

  /** The earliest live entry of all lanes; equal times go in arming order. */
  #earliest(): Entry | undefined {
    let best: Entry | undefined;
    for (const lane of this.#lanes.values()) {
      const first = this.#first(lane);
      if (first !== undefined && (best === undefined || first.at < best.at || (first.at === best.at && first.seq < best.seq))) best = first;
    }
    return best;
  }

  #compact(lane: Lane): void {
    const kept: Entry[] = [];
    for (let i = lane.head; i < lane.queue.length; i++) {
      const entry = lane.queue[i];
      if (entry === undefined) continue;
      entry.index = kept.length;
      kept.push(entry);
    }
    lane.queue = kept;
    lane.head = 0;
  }

  #schedule(): void {
    this.#clearTimer();
    const first = this.#earliest();
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
    for (let first = this.#earliest(); first !== undefined && first.at <= now; first = this.#earliest()) {
      const fire = first.fire!;
      this.cancel(first);
      try {
        fire();
      } catch (err) {
        console.error('pdlink: a request deadline failed', err);
      }
    }
    this.#schedule();
  }
}

/** The process's request clocks: every exchange arms its deadlines here. */
export const requestDeadlines = new Deadlines();
