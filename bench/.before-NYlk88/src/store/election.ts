/**
 * Leader election over a store lease, the same for controllers and Coordinators (MindIE's master
 * lock): a candidate holds the key while it renews its lease; the others retry every step and at
 * once when the watched key goes away.
 *
 * Timing: one step every TTL/4. The leader renews at each step, so three renewals in a row may be
 * lost before the lease lapses. A leader that cannot renew steps down one step before its lease
 * could have lapsed in the store (counted from when it sent its last successful renewal), so two
 * leaders never act at once. With `holdWhileDisconnected` (Coordinators) it keeps the title while
 * the store is unreachable and only yields once it sees someone else holding the key: a stale
 * master proxy is harmless, a cluster with no ready Coordinator is an outage.
 */
import { type Store, type StoreLease } from './store.ts';

export interface ElectionOptions {
  readonly store: Store;
  /** Key of the title, relative to the store's prefix. */
  readonly key: string;
  /** This candidate's value (its address): what others show as the leader. */
  readonly value: string;
  readonly ttlSeconds: number;
  readonly holdWhileDisconnected?: boolean;
  readonly now?: () => number;
  readonly log?: (line: string) => void;
}

export class Election {
  readonly #options: ElectionOptions;
  readonly #now: () => number;
  readonly #stepMs: number;
  readonly #listeners = new Set<(leader: boolean) => void>();
  #lease: StoreLease | undefined;
  #leader = false;
  #holder: string | undefined;
  /** When the last successful renewal (or the grant) was sent. */
  #renewedAt = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #unwatch: (() => void) | undefined;
  #stepping = false;
  #again = false;
  #closed = false;

  /** @example const election = new Election({ store, key: KEYS.controllerLeader, value: url, ttlSeconds: 2 }); election.start(); */
  constructor(options: ElectionOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#stepMs = (options.ttlSeconds * 1000) / 4;
  }

  get leader(): boolean {
    return this.#leader;
  }

  /** The current leader's value, as last seen (this candidate's own when it leads). */
  get holder(): string | undefined {
    return this.#leader ? this.#options.value : this.#holder;
  }

  /** Calls `listener` on every change of leadership; returns the unsubscribe. */
  onChange(listener: (leader: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  start(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => void this.step(), this.#stepMs);
    this.#unwatch = this.#options.store.watch(this.#options.key, (key, value) => {
      if (key !== this.#options.key) return;
      this.#holder = value;
      if (value === undefined && !this.#leader) void this.step();
    });
    void this.step();
  }

  /** One round: renew when leading, else try to take the key. Exposed for tests. */
  async step(): Promise<void> {
    if (this.#closed) return;
    if (this.#stepping) {
      this.#again = true;
      return;
    }
    this.#stepping = true;
    try {
      do {
        this.#again = false;
        await this.#round();
      } while (this.#again && !this.#closed);
    } finally {
      this.#stepping = false;
    }
  }

  /** Gives the title up (revoking the lease frees the key at once) and stops. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#unwatch?.();
    const lease = this.#lease;
    this.#lease = undefined;
    this.#set(false);
    await lease?.revoke();
  }

  async #round(): Promise<void> {
    const sentAt = this.#now();
    if (this.#leader && this.#lease !== undefined) {
      try {
        if (await this.#lease.keepAlive()) {
          this.#renewedAt = sentAt;
          return;
        }
        // The store dropped the lease (it lapsed while unreachable): try to take the key again.
        this.#lease = undefined;
      } catch {
        if (
          this.#options.holdWhileDisconnected !== true &&
          this.#now() >= this.#renewedAt + this.#options.ttlSeconds * 1000 - this.#stepMs
        ) {
          this.#options.log?.(`store unreachable for the whole lease: stepping down`);
          this.#lease = undefined;
          this.#set(false);
        }
        return;
      }
    }
    try {
      this.#lease ??= await this.#options.store.grantLease(this.#options.ttlSeconds);
      const { created, holder } = await this.#lease.createIfAbsent(this.#options.key, this.#options.value);
      this.#holder = holder;
      if (created) {
        this.#renewedAt = sentAt;
        this.#set(true);
      } else if (holder !== this.#options.value) {
        this.#set(false);
      }
    } catch {
      // Unreachable, or the lease lapsed between grant and create: a fresh lease next round.
      if (this.#lease !== undefined && !this.#leader) this.#lease = undefined;
    }
  }

  #set(leader: boolean): void {
    if (leader === this.#leader) return;
    this.#leader = leader;
    this.#options.log?.(leader ? `elected (${this.#options.key})` : `not leader (${this.#options.key})`);
    for (const listener of this.#listeners) listener(leader);
  }
}
