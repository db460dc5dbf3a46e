/**
 * Leader election over a store lease, the same for controllers and Coordinators (MindIE's master
 * lock). No two candidates hold the title at any instant, because a holder keeps it only while it
 * can prove its lease is live in the store (`#safeUntil`):
 * - A confirmed renewal proves the lease live for a TTL counted from when the renewal was sent (the
 *   store counts from when it arrived, later). A holder acts (`mayAct()`) only while such a proof is
 *   younger than TTL minus one step; each confirmed renewal also reads the key to check it is still
 *   bound to the lease.
 * - It stands down the moment it learns otherwise: the store says the lease is gone, the key is
 *   deleted or taken (a watch on the key), or a guarded write finds it not held (`lost()`).
 * - Unanswered renewals prove nothing: a store that is silent to this holder (a partition, a hung
 *   member, this process slow to read its answers) may be serving another candidate. So past its
 *   proof a holder stands down, with one exception that keeps a master Coordinator serving through
 *   an etcd outage: the store is down. When the members that refuse connections (no process listens)
 *   leave too few to form a quorum, the store can grant nothing to anyone, and the lease cannot lapse
 *   meanwhile: the etcd leader that next serves is newly elected and gives every lease a whole TTL
 *   (etcd's lease promotion). That holds once no earlier etcd leader can still be serving: every member
 *   refuses, or the quorum has been seen lost for longer than etcd's election timeout (at most TTL / 1.5:
 *   etcd grants no lease shorter than 1.5 election timeouts), after which a leader without its quorum
 *   has stepped down. Seen so, from a time the lease was still proven live, the proof extends to a TTL
 *   past each census that finds the store still down. A controller rides out so for at most two TTLs
 *   (it does not act meanwhile); a Coordinator (`holdWhileDisconnected`) for as long as the store
 *   stays down: a cluster with no ready Coordinator would be an outage.
 * Standbys read the key every step, at once when it is deleted and when the store comes back; a
 * holder that stood down keeps its lease and takes the title back at once if the store, back, still
 * binds the key to it (its lease was promoted).
 */
import type { Store, StoreLease } from './store.ts';
import { storeErrorReason } from './store-error.ts';

/** A standby's or a riding holder's quick retry, and how often a holder checks its title. */
const RETRY_MS = 100;

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
  readonly #store: Store;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #stepMs: number;
  readonly #listeners = new Set<(leader: boolean) => void>();
  #lease: StoreLease | undefined;
  #leader = false;
  #holder: string | undefined;
  /** When the last confirmed renewal (or the grant) was sent; acts stop one step before it could lapse. */
  #renewedAt = 0;
  /** Until when the lease is proven live in the store: a TTL past a confirmed renewal, or past a census that found the store down. */
  #safeUntil = 0;
  /** A renewal went unanswered since the last confirmed one: the store is surveyed. */
  #troubled = false;
  #surveying = false;
  /** The current run of censuses that found the store down: when the first was answered, and whether the lease was proven live then. */
  #downRun: { since: number; fromLiveLease: boolean } | undefined;
  /** Revision of the key this holder created: watch events older than it are about a predecessor. */
  #claimRevision = 0;
  #timers: ReturnType<typeof setInterval>[] = [];
  #retry: ReturnType<typeof setTimeout> | undefined;
  #unwatch: (() => void) | undefined;
  #unconnected: (() => void) | undefined;
  #stepping = false;
  #again = false;
  #closed = false;

  /** @example const election = new Election({ store, key: KEYS.controllerLeader, value: url, ttlSeconds: 2 }); election.start(); */
  constructor(options: ElectionOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.ttlSeconds * 1000;
    this.#stepMs = this.#ttlMs / 4;
  }

  /** Holds the title now (acting, or riding out a silent store). */
  get leader(): boolean {
    this.#check();
    return this.#leader;
  }

  /** The current holder's value, as last seen (this candidate's own when it holds the title). */
  get holder(): string | undefined {
    return this.leader ? this.#options.value : this.#holder;
  }

  /** The lease the title is held under, for writes guarded by it (undefined when not holding). */
  get leaseId(): string | undefined {
    return this.leader ? this.#lease?.id : undefined;
  }

  /** Whether the holder may act now: it holds the title and its last renewal proves the lease live. */
  mayAct(): boolean {
    return this.leader && this.#now() < this.#renewedAt + this.#ttlMs - this.#stepMs;
  }

  /** Calls `listener` on every change of the title; returns the unsubscribe. */
  onChange(listener: (leader: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  start(): void {
    if (this.#timers.length > 0 || this.#closed) return;
    this.#timers.push(setInterval(() => void this.step(), this.#stepMs));
    this.#timers.push(setInterval(() => this.#check(), RETRY_MS));
    for (const t of this.#timers) t.unref?.();
    this.#unwatch = this.#store.watch(this.#options.key, (key, value, revision) => this.#watched(key, value, revision));
    // The store came back: campaign (or confirm the title) at once, not at the next step.
    this.#unconnected = this.#store.onConnected((connected) => connected && void this.step());
    void this.step();
  }

  /** One round: renew when holding (resolving once that renewal is answered), else try to take the key. Exposed for tests. */
  async step(): Promise<void> {
    if (this.#closed) return;
    // Checked before any renewal goes out: one sent after a stall must not vouch for the stall.
    this.#check();
    if (this.#leader) return this.#renew();
    if (this.#stepping) {
      this.#again = true;
      return;
    }
    this.#stepping = true;
    try {
      do {
        this.#again = false;
        if (!this.#leader) await this.#campaign();
      } while (this.#again && !this.#closed);
    } finally {
      this.#stepping = false;
    }
  }

  /** A guarded write found the key not bound to this holder's lease: stand down at once. */
  lost(reason: string): void {
    if (!this.#leader) return;
    this.#lease = undefined;
    this.#standDown(reason);
    this.#soon();
  }

  /** Gives the title up (revoking the lease frees the key at once) and stops. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    clearTimeout(this.#retry);
    this.#unwatch?.();
    this.#unconnected?.();
    const lease = this.#lease;
    this.#lease = undefined;
    this.#set(false);
    await lease?.revoke();
  }

  /** Sends a renewal without waiting for the one before: a store that answers late must not slow the sending. */
  #renew(): Promise<void> {
    const lease = this.#lease!;
    const sentAt = this.#now();
    return lease.keepAlive().then(
      (alive) => this.#renewed(lease, sentAt, alive),
      (err: unknown) => this.#renewFailed(lease, err),
    );
  }

  async #renewed(lease: StoreLease, sentAt: number, alive: boolean): Promise<void> {
    if (lease !== this.#lease || !this.#leader) return;
    if (!alive) {
      this.#lease = undefined;
      this.#standDown('the store says the lease is gone');
      return this.step();
    }
    this.#proven(sentAt);
    // Answered so late that the proof is still stale (riding out): renewed again at once.
    if (this.#now() >= this.#renewedAt + this.#ttlMs - this.#stepMs) this.#soon();
    await this.#verify(lease);
  }

  #renewFailed(lease: StoreLease, err: unknown): void {
    if (lease !== this.#lease || !this.#leader) return;
    if (storeErrorReason(err) === 'unreachable') {
      this.#troubled = true;
      this.#check();
      this.#soon();
      return;
    }
    this.#lease = undefined;
    this.#standDown(`renewal refused: ${err instanceof Error ? err.message : String(err)}`);
    this.#soon();
  }

  /** The proof that the key is still bound to the lease (a watch event may be on its way). */
  async #verify(lease: StoreLease): Promise<void> {
    const held = await this.#store.held(this.#options.key).catch(() => 'unknown' as const);
    if (held === 'unknown' || lease !== this.#lease || !this.#leader) return;
    if (held?.lease !== lease.id) {
      this.#lease = undefined;
      this.#holder = held?.value;
      this.#standDown(held === undefined ? 'the key is gone' : `the key is held by ${held.value}`);
      this.#soon();
    }
  }

  async #campaign(): Promise<void> {
    const key = this.#options.key;
    try {
      const held = await this.#store.held(key);
      const mine = this.#lease;
      if (held !== undefined) this.#holder = held.value;
      if (held !== undefined && (mine === undefined || held.lease !== mine.id)) return;
      if (held !== undefined && mine !== undefined) {
        // Still bound to the lease this candidate kept through an outage: take the title back if the lease lives.
        const sentAt = this.#now();
        if (await mine.keepAlive()) return this.#elected(mine, sentAt, 0, 'the store kept the key on this lease');
        this.#lease = undefined;
        return;
      }
      if (mine !== undefined) void mine.revoke().catch(() => {});
      this.#lease = undefined;
      const sentAt = this.#now();
      const lease = await this.#store.grantLease(this.#options.ttlSeconds);
      const { created, holder, revision } = await this.#store.claim(key, this.#options.value, lease);
      if (created) return this.#elected(lease, sentAt, revision, undefined);
      this.#holder = holder?.value;
      void lease.revoke().catch(() => {});
    } catch {
      // Unreachable, or the lease lapsed between grant and claim: the next step tries again.
    }
  }

  #elected(lease: StoreLease, sentAt: number, revision: number, why: string | undefined): void {
    if (this.#closed) {
      void lease.revoke().catch(() => {});
      return;
    }
    this.#lease = lease;
    this.#renewedAt = 0;
    this.#safeUntil = 0;
    this.#proven(sentAt);
    this.#claimRevision = Math.max(this.#claimRevision, revision);
    if (why !== undefined) this.#options.log?.(`${why}: title taken back`);
    this.#set(true);
  }

  #watched(key: string, value: string | undefined, revision: number): void {
    if (key !== this.#options.key) return;
    if (this.#leader && revision < this.#claimRevision) return;
    if (value !== this.#options.value) this.#holder = value;
    if (!this.#leader) {
      if (value === undefined) void this.step();
      return;
    }
    if (value === undefined || value !== this.#options.value) {
      this.#lease = undefined;
      this.#standDown(value === undefined ? 'the key was deleted' : `the key was taken by ${value}`);
      this.#soon();
    }
  }

  /** A renewal sent at `sentAt` was confirmed: the lease lives a TTL past it. */
  #proven(sentAt: number): void {
    this.#renewedAt = Math.max(this.#renewedAt, sentAt);
    this.#safeUntil = Math.max(this.#safeUntil, sentAt + this.#ttlMs);
    this.#troubled = false;
    this.#downRun = undefined;
  }

  /** Stands down once the lease is no longer proven live (a controller also two TTLs after its last confirmed renewal). */
  #check(): void {
    if (!this.#leader) return;
    const now = this.#now();
    this.#survey(now);
    const bounded = this.#options.holdWhileDisconnected !== true && now >= this.#renewedAt + 2 * this.#ttlMs;
    if (now < this.#safeUntil && !bounded) return;
    this.#standDown(
      now < this.#safeUntil
        ? `etcd down for two TTLs (${now - this.#renewedAt} ms since the last confirmed renewal)`
        : `the lease is not proven live: no renewal confirmed for ${now - this.#renewedAt} ms and the store is not seen down`,
    );
    this.#soon();
  }

  /** While renewals go unanswered (or are overdue), asks the store how many of its members refuse connections. */
  #survey(now: number): void {
    const store = this.#store;
    if (store.census === undefined || this.#surveying || this.#lease === undefined) return;
    // Renewals go out every step and are answered within milliseconds: one and a half steps is overdue.
    if (!this.#troubled && now < this.#renewedAt + 1.5 * this.#stepMs) return;
    this.#surveying = true;
    const lease = this.#lease;
    store
      .census()
      .then(
        ({ refused, members }) => {
          if (lease === this.#lease && this.#leader) this.#surveyed(now, this.#now(), refused, members, lease);
        },
        () => {},
      )
      .finally(() => (this.#surveying = false));
  }

  /**
   * A census sent at `sentAt` and answered at `answeredAt`: when the members refusing connections
   * leave no quorum, and no earlier etcd leader can still serve (every member refuses, or the quorum
   * has been lost longer than an election timeout), the lease lives a TTL past the census.
   */
  #surveyed(sentAt: number, answeredAt: number, refused: number, members: number, lease: StoreLease): void {
    if (members === 0 || refused < Math.ceil(members / 2)) {
      this.#downRun = undefined;
      return;
    }
    this.#downRun ??= { since: answeredAt, fromLiveLease: answeredAt < this.#safeUntil };
    const electionTimeoutMs = (lease.ttlSeconds * 1000) / 1.5;
    if (!this.#downRun.fromLiveLease) return;
    if (refused === members || sentAt - this.#downRun.since >= electionTimeoutMs) {
      this.#safeUntil = Math.max(this.#safeUntil, sentAt + this.#ttlMs);
    }
  }

  #standDown(reason: string): void {
    if (!this.#leader) return;
    this.#options.log?.(`standing down (${this.#options.key}): ${reason}`);
    this.#set(false);
  }

  #soon(): void {
    if (this.#closed || this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.step();
    }, RETRY_MS);
    this.#retry.unref?.();
  }

  #set(leader: boolean): void {
    if (leader === this.#leader) return;
    this.#leader = leader;
    this.#options.log?.(leader ? `elected (${this.#options.key})` : `not leader (${this.#options.key})`);
    for (const listener of this.#listeners) listener(leader);
  }
}
