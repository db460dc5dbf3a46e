/**
 * Leader election over a store lease, the same for controllers and Coordinators (MindIE's master
 * lock). No two candidates hold the title at any instant:
 * - A holder acts only while its proof is fresh (`mayAct()`): a renewal of its lease confirmed
 *   within TTL minus one step, counted from when the renewal was sent, so the lease cannot have
 *   lapsed in the store; each confirmed renewal also reads the key to check it is still bound to
 *   the lease.
 * - It stands down the moment it learns otherwise: the store says the lease is gone, the key is
 *   deleted or taken (a watch on the key), or a guarded write finds it not held (`lost()`).
 * - Past its proof it keeps the title without acting while a TTL has not passed since its last
 *   confirmed renewal (the lease cannot have lapsed), and past that only while it keeps sending
 *   renewals that go unanswered (riding out a silent store, as during an etcd leader election): a
 *   renewal sent within a TTL either reached a live store, which renewed the lease, or a store that
 *   could give the key to nobody. A process that stopped sending (stopped, starved) for a TTL
 *   cannot tell what happened meanwhile, so it stands down before it sends again. A controller
 *   rides out for at most two TTLs; a Coordinator (`holdWhileDisconnected`) for as long as the
 *   store stays silent: a stale master proxy is harmless, a cluster with no ready Coordinator is
 *   an outage.
 * Standbys read the key every step, at once when it is deleted and when the store comes back; a
 * holder that rode out too long keeps its lease and takes the title back at once if the store,
 * back, still binds the key to it.
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
  /** Revision of the key this holder created: watch events older than it are about a predecessor. */
  #claimRevision = 0;
  /** When the last renewal was sent, answered or not. */
  #sentAt = 0;
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
    this.#sentAt = sentAt;
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
    this.#renewedAt = Math.max(this.#renewedAt, sentAt);
    // Answered so late that the proof is still stale (riding out): renewed again at once.
    if (this.#now() >= this.#renewedAt + this.#ttlMs - this.#stepMs) this.#soon();
    await this.#verify(lease);
  }

  #renewFailed(lease: StoreLease, err: unknown): void {
    if (lease !== this.#lease || !this.#leader) return;
    if (storeErrorReason(err) === 'unreachable') {
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
    this.#renewedAt = sentAt;
    this.#sentAt = sentAt;
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

  /** Stands down when the lease may have lapsed (a TTL since the last confirmed renewal) and the title cannot be ridden out. */
  #check(): void {
    if (!this.#leader) return;
    const now = this.#now();
    // Within a TTL of a confirmed renewal the lease cannot have lapsed: the title is certain (acts stop a step earlier).
    if (now < this.#renewedAt + this.#ttlMs) return;
    const sending = now < this.#sentAt + this.#ttlMs;
    if (sending && (this.#options.holdWhileDisconnected === true || now < this.#renewedAt + 2 * this.#ttlMs)) return;
    this.#standDown(
      sending
        ? `the store was silent for ${now - this.#renewedAt} ms`
        : `no renewal sent for ${now - this.#sentAt} ms (this process stalled)`,
    );
    this.#soon();
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
