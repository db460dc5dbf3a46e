/**
 * Runtime events against the manager's own calls, in time. Events reach the manager on their own
 * path, so they may arrive after a call that already saw their effect (a peer's forced unlink drops
 * D's end and queues "peer lost"; D's forced unlink and relink follow at once; the late event must
 * not fail the new link), or while a link call is still out (the peer drops the link the call has
 * just made; the call's success must not list it). The runtime stamps events with the wall clock
 * in ms; a call's start is taken on the same clock before the call is sent, so an event stamped
 * earlier happened before the call began, and one stamped later may be about what the call made.
 */

import { linkKey } from './key.ts';

/** How long a settling time is kept: far longer than any event waits for delivery. */
export const TIMELINE_KEEP_MS = 60_000;
/** Entries between two sweeps of expired ones. */
const SWEEP_EVERY = 1024;

/** A loss of a link reported while a call to make it was out. */
export interface Drop {
  readonly code: number;
  readonly reason: string;
}

export class CallTimeline {
  readonly #at = new Map<string, number>();
  /** Link calls out now: when each began, and a loss reported since. */
  readonly #linking = new Map<string, { startedAt: number; drop: Drop | undefined }>();
  #sinceSweep = 0;

  /**
   * Notes that a call to make the link began at `startedAt` (epoch ms).
   * @example timeline.begin('0', 7n, startedAt);
   */
  begin(endpoint: string, remoteClusterId: bigint, startedAt: number): void {
    this.#linking.set(linkKey(endpoint, remoteClusterId), { startedAt, drop: undefined });
  }

  /**
   * Keeps a loss reported while the link call is out, unless stamped before the call began (then
   * it is about an earlier link). An unstamped loss is kept.
   * @example timeline.dropWhileLinking('0', 7n, event.timeMs, { code: event.code, reason: 'peer-lost' });
   */
  dropWhileLinking(endpoint: string, remoteClusterId: bigint, timeMs: number | undefined, drop: Drop): void {
    const call = this.#linking.get(linkKey(endpoint, remoteClusterId));
    if (call !== undefined && (timeMs === undefined || timeMs >= call.startedAt)) call.drop ??= drop;
  }

  /**
   * Ends the link call and returns the loss reported while it was out, if any.
   * @example const drop = timeline.end('0', 7n);
   */
  end(endpoint: string, remoteClusterId: bigint): Drop | undefined {
    const key = linkKey(endpoint, remoteClusterId);
    const drop = this.#linking.get(key)?.drop;
    this.#linking.delete(key);
    return drop;
  }

  /**
   * Notes that a call which began at `startedAt` (epoch ms) settled the link: its answer says
   * what the runtime held at the end of the call.
   * @example timeline.record('0', 7n, startedAt);
   */
  record(endpoint: string, remoteClusterId: bigint, startedAt: number): void {
    const key = linkKey(endpoint, remoteClusterId);
    this.#at.delete(key); // re-inserted: the map keeps record order, close to time order, for the sweep
    this.#at.set(key, startedAt);
    if (++this.#sinceSweep >= SWEEP_EVERY) this.#sweep(startedAt);
  }

  /**
   * True when an event stamped `timeMs` happened before the last call that settled the link began.
   * Within the same millisecond it cannot tell, and the event is taken as news.
   * @example if (timeline.predates('0', 7n, event.timeMs)) return;
   */
  predates(endpoint: string, remoteClusterId: bigint, timeMs: number): boolean {
    const at = this.#at.get(linkKey(endpoint, remoteClusterId));
    return at !== undefined && timeMs < at;
  }

  get size(): number {
    return this.#at.size;
  }

  #sweep(now: number): void {
    this.#sinceSweep = 0;
    for (const [key, at] of this.#at) {
      if (at >= now - TIMELINE_KEEP_MS) break;
      this.#at.delete(key);
    }
  }
}
