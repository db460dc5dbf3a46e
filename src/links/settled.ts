/**
 * When a runtime call last settled each link, so that a runtime event older than that call is not
 * applied over its result. Events reach the manager on their own path and may arrive after a call
 * that already saw their effect: a peer's forced unlink drops D's end (event queued), D's own
 * forced unlink and relink follow at once, and the late "peer lost" must not fail the new link.
 * The runtime stamps events with the wall clock in ms; a call's start is taken on the same clock
 * before the call is sent, so an event stamped earlier happened before the call began.
 */

/** How long a settling time is kept: far longer than any event waits for delivery. */
export const SETTLED_KEEP_MS = 60_000;
/** Entries between two sweeps of expired ones. */
const SWEEP_EVERY = 1024;

export class SettledLinks {
  readonly #at = new Map<string, number>();
  #sinceSweep = 0;

  /**
   * Notes that a call which began at `startedAt` (epoch ms) settled the link: its answer says
   * what the runtime held at the end of the call.
   * @example settled.record('0', 7n, startedAt);
   */
  record(endpoint: string, remoteClusterId: bigint, startedAt: number): void {
    const key = `${endpoint}\u0000${remoteClusterId}`;
    this.#at.delete(key); // re-inserted: the map keeps record order, close to time order, for the sweep
    this.#at.set(key, startedAt);
    if (++this.#sinceSweep >= SWEEP_EVERY) this.#sweep(startedAt);
  }

  /**
   * True when an event stamped `timeMs` happened before the last call that settled the link began.
   * Within the same millisecond it cannot tell, and the event is taken as news.
   * @example if (settled.predates('0', 7n, event.timeMs)) return;
   */
  predates(endpoint: string, remoteClusterId: bigint, timeMs: number): boolean {
    const at = this.#at.get(`${endpoint}\u0000${remoteClusterId}`);
    return at !== undefined && timeMs < at;
  }

  get size(): number {
    return this.#at.size;
  }

  #sweep(now: number): void {
    this.#sinceSweep = 0;
    for (const [key, at] of this.#at) {
      if (at >= now - SETTLED_KEEP_MS) break;
      this.#at.delete(key);
    }
  }
}
