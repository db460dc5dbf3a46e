/**
 * The desired links of the current role, each with its retry state, and which of them are up:
 * the role driver's view of "what should exist", read against the link manager's table, which
 * stays the one source of truth for what does exist.
 */
import type { LeaseClock } from '../../core/lease-clock.ts';
import type { LinkManager } from '../../links/manager.ts';
import type { PlannedLink } from './plan.ts';
import { retryDelay, type RetryPolicy } from './retry.ts';
import { linkView, type LinkView, type RetryState } from '../status.ts';

/** One desired link and its retry state (mutable: the driver updates it in place). */
export interface Tracked extends RetryState {
  plan: PlannedLink;
  failures: number;
  lastCode: number | undefined;
  nextAttemptAt: number | undefined;
  /** Listed as linked by the manager, but the peer has unlinked it. */
  stale: boolean;
}

export class DesiredLinks {
  readonly #manager: LinkManager;
  readonly #policy: RetryPolicy;
  readonly #clock: LeaseClock;
  readonly #random: () => number;
  #links = new Map<string, Tracked>();
  /** Keys of desired links not currently up. */
  readonly #down = new Set<string>();
  /** Links the driver is linking or unlinking right now (nested holds counted). */
  readonly #busy = new Map<string, number>();

  constructor(manager: LinkManager, policy: RetryPolicy, clock: LeaseClock, random: () => number) {
    this.#manager = manager;
    this.#policy = policy;
    this.#clock = clock;
    this.#random = random;
  }

  get size(): number {
    return this.#links.size;
  }

  /** Desired links currently up. */
  get up(): number {
    return this.#links.size - this.#down.size;
  }

  get allUp(): boolean {
    return this.#down.size === 0;
  }

  /**
   * Replaces the desired set; links that stay keep their retry state.
   * @example desired.replace(plan.links);
   */
  replace(plan: readonly PlannedLink[]): void {
    const before = this.#links;
    this.#links = new Map(
      plan.map((p) => {
        const old = before.get(p.key);
        return [
          p.key,
          old === undefined ? { plan: p, failures: 0, lastCode: undefined, nextAttemptAt: undefined, stale: false } : { ...old, plan: p },
        ];
      }),
    );
    this.#down.clear();
    for (const t of this.#links.values()) this.refresh(t);
  }

  get(key: string): Tracked | undefined {
    return this.#links.get(key);
  }

  /** True while `t` is still part of the desired set (a replace drops or copies records). */
  isCurrent(t: Tracked): boolean {
    return this.#links.get(t.plan.key) === t;
  }

  all(): Tracked[] {
    return [...this.#links.values()];
  }

  /** Desired links whose retry is due at `now`. */
  due(now: number): Tracked[] {
    return this.all().filter((t) => t.nextAttemptAt !== undefined && t.nextAttemptAt <= now);
  }

  /** Earliest scheduled retry, if any. */
  nextDue(): number | undefined {
    let due: number | undefined;
    for (const t of this.#links.values())
      if (t.nextAttemptAt !== undefined && (due === undefined || t.nextAttemptAt < due)) due = t.nextAttemptAt;
    return due;
  }

  /** The desired set as links to diff against the table. */
  plans(): PlannedLink[] {
    return [...this.#links.values()].map((t) => t.plan);
  }

  hold(key: string): void {
    this.#busy.set(key, (this.#busy.get(key) ?? 0) + 1);
  }

  release(key: string): void {
    const n = (this.#busy.get(key) ?? 1) - 1;
    if (n > 0) this.#busy.set(key, n);
    else this.#busy.delete(key);
  }

  /** The driver is acting on this link: its state changes are the driver's own doing. */
  isBusy(key: string): boolean {
    return this.#busy.has(key);
  }

  succeeded(t: Tracked): void {
    t.failures = 0;
    t.lastCode = undefined;
    t.nextAttemptAt = undefined;
    t.stale = false;
  }

  /** Counts a failure and schedules the next attempt after the backoff. */
  failed(t: Tracked, code: number): void {
    t.failures++;
    t.lastCode = code;
    t.nextAttemptAt = this.#clock.now() + retryDelay(t.failures, this.#policy, this.#random);
  }

  /** Puts off the next attempt by one base period without counting a failure (someone else's call owns the link). */
  postpone(t: Tracked): void {
    t.nextAttemptAt = this.#clock.now() + this.#policy.baseMs;
  }

  view(t: Tracked): LinkView {
    return linkView(this.#manager.get(t.plan.endpoint, t.plan.remoteClusterId), t, t.stale);
  }

  /** Re-reads whether `t` is up. */
  refresh(t: Tracked): void {
    if (this.view(t) === 'ok') this.#down.delete(t.plan.key);
    else this.#down.add(t.plan.key);
  }
}
