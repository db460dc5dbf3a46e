/**
 * The lease renewals of the proxy's KV reservations on one timer per lease length. A reservation
 * renews its lease every half lease while its request runs; with a timer of its own, every request
 * armed and cleared an interval, almost always long before it first fired. Here a running
 * reservation is a member of a set, and one interval renews every member: each is renewed at
 * least every half lease, as before (the first renewal may come sooner, which costs nothing). The
 * timer stops at the first tick that finds the set empty, not when the last member leaves: one
 * request at a time would otherwise arm and clear it for each request. It never keeps the process alive.
 */

/** What a renewal calls on each running reservation. */
export interface Renewable {
  renew(): void;
}

export class LeaseRenewals {
  readonly #periodMs: number;
  readonly #members = new Set<Renewable>();
  #timer: ReturnType<typeof setInterval> | undefined;

  /**
   * Renewals every `periodMs`.
   * @example const renewals = new LeaseRenewals(15_000);
   */
  constructor(periodMs: number) {
    this.#periodMs = periodMs;
  }

  /** Reservations being renewed. */
  get size(): number {
    return this.#members.size;
  }

  /** Whether the timer runs. */
  get armed(): boolean {
    return this.#timer !== undefined;
  }

  /**
   * Renews `member` from now on, until `remove`.
   * @example renewals.add(reservation);
   */
  add(member: Renewable): void {
    this.#members.add(member);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#renewAll(), this.#periodMs);
      this.#timer.unref?.();
    }
  }

  /**
   * Stops renewing `member`; the timer stops at its next tick if no member is left then.
   * @example renewals.remove(reservation);
   */
  remove(member: Renewable): void {
    this.#members.delete(member);
  }

  #renewAll(): void {
    if (this.#members.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    for (const member of this.#members) {
      try {
        member.renew();
      } catch (err) {
        console.error('pdlink: could not renew a KV reservation', err);
      }
    }
  }
}

const byPeriod = new Map<number, LeaseRenewals>();

/**
 * The process's renewals every `periodMs` (one per lease length the proxy is configured with).
 * @example leaseRenewals(Math.floor(settings.leaseMs / 2)).add(reservation);
 */
export function leaseRenewals(periodMs: number): LeaseRenewals {
  let renewals = byPeriod.get(periodMs);
  if (renewals === undefined) byPeriod.set(periodMs, (renewals = new LeaseRenewals(periodMs)));
  return renewals;
}
