/**
 * Leader election over a store lease, the same for controllers and Coordinators (MindIE's master
 * lock). No two candidates hold the title at any instant:
 * - A holder acts only while its proof is fresh (`mayAct()`): a renewal of its lease confirmed
 *   within TTL minus one step, counted from when the renewal was sent, so the lease cannot have
 *   lapsed in the store; each renewal also reads the key to check it is still bound to the lease.
 * - It stands down the moment it learns otherwise: the store says the lease is gone, the key is
 *   deleted or taken (a watch on the key), or a guarded write finds it not held (`lost()`).
 * - Past its proof it keeps the title without acting until a TTL has passed since its last
 *   renewal (till then the lease cannot have lapsed); past that only while the store is provably
 *   silent — renewals sent in time fail or wait for want of an answer, as during an etcd leader
 *   election — and this process did not stall: a process that was stopped cannot tell what
 *   happened meanwhile, so it stands down on waking. A controller rides out for at most two TTLs;
 *   a Coordinator (`holdWhileDisconnected`) for as long as the store stays silent: a stale master
 *   proxy is harmless, a cluster with no ready Coordinator is an outage.
 * Standbys read the key every step, at once when it is deleted and when the store comes back; a
 * holder that rode out too long keeps its lease and takes the title back at once if the store,
 * back, still binds the key to it.
 */
import type { Store, StoreLease } from './store.ts';
import { storeErrorReason } from './store-error.ts';

/** A standby's or a riding holder's quick retry. */
const RETRY_MS = 100;
/** The heartbeat that tells a stalled (stopped, starved) process from a silent store. */
const TICK_MS = 100;

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
  /** Riding out: when renewals began to fail for want of an answer (undefined: not riding). */
  #silentSince: number | undefined;
  /** When the renewal in flight was sent: an unanswered renewal is the store's silence too. */
  #pendingSince: number | undefined;
  #lastTickAt: number;
  #stalledAt = -Infinity;
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
    this.#lastTickAt = this.#now();
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
    this.#timers.push(setInterval(() => this.#tick(), TICK_MS));
    for (const t of this.#timers) t.unref?.();
    this.#unwatch = this.#store.watch(this.#options.key, (key, value, revision) => this.#watched(key, value, revision));
    // The store came back: campaign (or confirm the title) at once, not at the next step.
    this.#unconnected = this.#store.onConnected((connected) => connected && void this.step());
    void this.step();
  }

  /** One round: renew when holding, else try to take the key. Exposed for tests. */
  async step(): Promise<void> {
    if (this.#closed) return;
    this.#tick();
    if (this.#stepping) {
      this.#again = true;
      return;
    }
    this.#stepping = true;
    try {
      do {
        this.#again = false;
        this.#tick();
        await (this.#leader ? this.#renew() : this.#campaign());
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

  async #renew(): Promise<void> {
    const lease = this.#lease!;
    const sentAt = this.#now();
    let alive: boolean;
    this.#pendingSince = sentAt;
    try {
      alive = await lease.keepAlive();
    } catch (err) {
      this.#silent(err, sentAt);
      return;
    } finally {
      this.#pendingSince = undefined;
    }
    if (lease !== this.#lease || !this.#leader) return;
    if (!alive) {
      this.#lease = undefined;
      this.#standDown('the store says the lease is gone');
      return this.#campaign();
    }
    this.#renewedAt = Math.max(this.#renewedAt, sentAt);
    if (this.#now() < sentAt + this.#ttlMs - this.#stepMs) this.#silentSince = undefined;
    else {
      // Answered, but so late that it proves little: still riding out, and renewed again at once.
      this.#silentSince ??= sentAt;
      this.#soon();
    }
    // The proof that the key is still bound to the lease (a watch event may be on its way).
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
    this.#claimRevision = Math.max(this.#claimRevision, revision);
    this.#silentSince = undefined;
    if (why !== undefined) this.#options.log?.(`${why}: title taken back`);
    this.#set(true);
  }

  /** A renewal failed: ride out a silent store, stand down for anything else. */
  #silent(err: unknown, sentAt: number): void {
    if (!this.#leader) return;
    if (storeErrorReason(err) !== 'unreachable') {
      this.#lease = undefined;
      this.#standDown(`renewal refused: ${err instanceof Error ? err.message : String(err)}`);
      this.#soon();
      return;
    }
    this.#tick();
    // A failure that reached this process late says nothing about the store.
    if (this.#stalledAt < sentAt) this.#silentSince ??= this.#now();
    this.#check();
    this.#soon();
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

  /** Stands down when the lease may have lapsed (a TTL since the last renewal) and the title cannot be ridden out. */
  #check(): void {
    if (!this.#leader) return;
    const now = this.#now();
    // Within a TTL of a confirmed renewal the lease cannot have lapsed: the title is certain (acts stop a step earlier).
    if (now < this.#renewedAt + this.#ttlMs) return;
    if (now - this.#lastTickAt > this.#stepMs) this.#stalledAt = now;
    const silentSince = this.#silentSince ?? this.#pendingSince;
    const riding =
      silentSince !== undefined &&
      this.#stalledAt < silentSince &&
      (this.#options.holdWhileDisconnected === true || now < this.#renewedAt + 2 * this.#ttlMs);
    if (riding) return;
    this.#standDown(
      silentSince === undefined || this.#stalledAt >= silentSince
        ? 'no renewal confirmed in time'
        : `the store was silent for ${now - silentSince} ms`,
    );
    this.#soon();
  }

  #standDown(reason: string): void {
    if (!this.#leader) return;
    this.#silentSince = undefined;
    this.#options.log?.(`standing down (${this.#options.key}): ${reason}`);
    this.#set(false);
  }

  #tick(): void {
    const now = this.#now();
    if (now - this.#lastTickAt > this.#stepMs) this.#stalledAt = now;
    this.#lastTickAt = now;
    this.#check();
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
