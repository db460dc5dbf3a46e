/**
 * The link state table: one entry per (local endpoint, remote cluster), the single source of
 * truth for link state. Every change emits a LinkEvent; an entry that reaches `unlinked` is removed.
 */
import type { IpPort } from './endpoint.ts';
import { linkKey } from './key.ts';
import { LLM_STATUS } from '../core/llm-status.ts';
import type { LinkEvent, LinkInfo, LinkSide, LinkState } from './types.ts';

export type LinkListener = (event: LinkEvent) => void;

export interface EntryChange {
  readonly state: LinkState;
  readonly reason: string;
  readonly code?: number;
  readonly side?: LinkSide;
  readonly remote?: IpPort;
}

export class LinkTable {
  readonly #entries = new Map<string, LinkInfo>();
  readonly #listeners = new Set<LinkListener>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  get(endpoint: string, remoteClusterId: bigint): LinkInfo | undefined {
    return this.#entries.get(linkKey(endpoint, remoteClusterId));
  }

  /** Every entry, sorted by endpoint then cluster id, so listings are stable. */
  list(): LinkInfo[] {
    return [...this.#entries.values()].sort((a, b) =>
      a.endpoint === b.endpoint
        ? a.remoteClusterId < b.remoteClusterId
          ? -1
          : a.remoteClusterId > b.remoteClusterId
            ? 1
            : 0
        : a.endpoint < b.endpoint
          ? -1
          : 1,
    );
  }

  /** Entry counts by state and side, for the links gauge. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const e of this.#entries.values()) {
      const k = `${e.state}\u0000${e.side}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    return counts;
  }

  /**
   * Moves an entry to a new state (creating it if needed) and emits the change.
   * @example table.set('0', 7n, { state: 'linking', reason: 'link', side: 'client', remote });
   */
  set(endpoint: string, remoteClusterId: bigint, change: EntryChange): void {
    const key = linkKey(endpoint, remoteClusterId);
    const before = this.#entries.get(key);
    const from: LinkState = before?.state ?? 'unlinked';
    const side = change.side ?? before?.side ?? 'client';
    const code = change.code ?? LLM_STATUS.LLM_SUCCESS;
    if (change.state === 'unlinked') {
      if (before === undefined) return;
      this.#entries.delete(key);
    } else {
      if (
        before !== undefined &&
        before.state === change.state &&
        before.code === code &&
        before.side === side &&
        change.remote === undefined
      )
        return;
      this.#entries.set(key, {
        endpoint,
        remoteClusterId,
        remote: change.remote ?? before?.remote,
        side,
        state: change.state,
        code,
        since: this.#now(),
      });
    }
    // Nobody listening (a manager without subscribers): no event object to make.
    if (this.#listeners.size > 0) this.#emit({ endpoint, remoteClusterId, side, from, to: change.state, code, reason: change.reason });
  }

  /** Subscribes to changes; returns the unsubscribe function. */
  onChange(listener: LinkListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: LinkEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (cause) {
        // A faulty subscriber must not corrupt the state machine or starve the others.
        console.error('pdlink: link event listener failed', cause);
      }
    }
  }
}
