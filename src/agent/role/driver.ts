/**
 * The role driver of the instance agent: takes role posts (`POST /v1/role/{role}`), applies them
 * one at a time in arrival order, and keeps the links of the current role at the desired set.
 *
 * - decode is the link client: each post unlinks the client links no longer desired and links
 *   the new ones; a desired link that fails (refused, timed out, peer lost, unlinked by the peer)
 *   is retried with capped exponential backoff and shows `failed: <code>` until it is up again.
 * - prefill listens on every device and links nothing; each post unlinks the server links of
 *   clients that its desired peers do not account for. Before its first post, and between posts,
 *   it accepts any client: the Controller may tell the decode side first, and the next post
 *   judges whatever linked in between.
 * - a role change (prefill ↔ decode) unlinks every link of the agent (normal unlink, force as
 *   fallback), switches, then applies the new desired set.
 * Posts queue behind the one being applied (queue.ts); consecutive queued posts of the same
 * role collapse into the latest, whose desired set wins either way. What to link and unlink is
 * computed by diffLinks (links/diff.ts); the driver keeps the retry state around it.
 */
import { errors } from '../../core/errors.ts';
import { systemClock, type LeaseClock } from '../../core/lease-clock.ts';
import type { LinkManager } from '../../links/manager.ts';
import { LLM_STATUS, statusName } from '../../core/llm-status.ts';
import { diffLinks } from '../../links/diff.ts';
import { linkKey } from '../../links/key.ts';
import type { LinkEvent, LinkInfo, RuntimeLinkEvent } from '../../links/types.ts';
import type { Role, RoleRequest } from '../../schema/role.ts';
import { linkAll, unlinkAll, type LinkRef } from './calls.ts';
import { DesiredLinks, type Tracked } from './desired.ts';
import { createRoleMetrics, type RoleMetrics } from './metrics.ts';
import { planLinks, type LocalDevice, type PlannedLink } from './plan.ts';
import { RoleJobQueue, type RoleJob, type RolePostJob } from './queue.ts';
import { linkSettings, type RoleControllerOptions } from './options.ts';
import { retryPolicy, RetryTimer } from './retry.ts';
import { statusBody, type ResourceReport, type RoleStatusName, type StatusBody } from '../status.ts';

export { MAX_QUEUED_POSTS } from './queue.ts';

/** The embedding engine's part of a role change (`from` undefined: the first role it is given). */
export type RoleSwitchHook = (from: Role | undefined, to: Role) => Promise<void>;
export type { RoleControllerOptions } from './options.ts';

const closing = () => errors.unavailable('the instance agent is shutting down');

export class RoleController {
  readonly #manager: LinkManager;
  readonly #devices: readonly LocalDevice[];
  readonly #endpoints: ReadonlySet<string>;
  readonly #basePort: number;
  readonly #timeoutMs: number;
  readonly #clock: LeaseClock;
  readonly #metrics: RoleMetrics;
  readonly #desired: DesiredLinks;
  readonly #timer: RetryTimer;
  readonly #unsubscribe: () => void;
  readonly #queue = new RoleJobQueue((job) => this.#run(job));
  readonly #waiters = new Set<{ resolve: () => void; reject: (err: Error) => void }>();
  #role: Role | undefined;
  #applying: Role | undefined;
  /** Acceptance time of the last applied post until RoleReady is reached. */
  #readySince: number | undefined;
  #lastError: { message: string; at: number } | undefined;
  #resources: (() => ResourceReport) | undefined;
  #switching: RoleSwitchHook | undefined;
  #closed = false;

  constructor(options: RoleControllerOptions) {
    const { basePort, timeoutMs } = linkSettings(options);
    this.#manager = options.manager;
    this.#devices = options.devices;
    this.#endpoints = new Set(options.devices.map((d) => d.endpoint));
    this.#basePort = basePort;
    this.#timeoutMs = timeoutMs;
    this.#clock = options.clock ?? systemClock;
    this.#desired = new DesiredLinks(this.#manager, retryPolicy(options.retry), this.#clock, options.random ?? Math.random);
    this.#metrics = createRoleMetrics(options.metrics, () => ({ desired: this.#desired.size, linked: this.#desired.up }));
    this.#timer = new RetryTimer(this.#clock, () => this.#queue.retry());
    this.#unsubscribe = this.#manager.onChange((event) => this.#onLinkEvent(event));
  }

  /**
   * Accepts a validated role request: throws the 422 (or 429) to answer, else queues it and
   * returns at once; reconciliation runs in the background.
   * @example controller.submit(toRoleRequest('decode', body));
   */
  submit(request: RoleRequest): void {
    if (this.#closed) throw closing();
    const { links, issues } = planLinks(request, this.#devices, this.#basePort);
    if (issues.length > 0) throw errors.unprocessable(issues);
    this.#queue.post({ kind: 'post', request, plan: links, acceptedAt: this.#clock.now() });
    this.#metrics.posted(request.role);
  }

  /** The current role, or undefined before the first post has been applied. */
  get role(): Role | undefined {
    return this.#role;
  }

  get roleStatus(): RoleStatusName {
    if (this.#applying !== undefined || this.#queue.posts > 0) return 'RoleSwitching';
    if (this.#role === undefined) return 'RoleUnknown';
    return this.#desired.allUp ? 'RoleReady' : 'RoleSwitching';
  }

  /**
   * The body of `GET /v1/status`.
   * @example c.json(controller.status())
   */
  status(): StatusBody {
    return statusBody({
      roleStatus: this.roleStatus,
      currentRole: this.#role,
      switchingTo: this.#applying,
      queuedPosts: this.#queue.posts,
      lastError: this.#lastError,
      links: this.#desired.all().map((t) => ({ plan: t.plan, view: this.#desired.view(t), retry: t })),
      now: this.#clock.now(),
      resource: this.#resources?.(),
    });
  }

  /**
   * Lets the embedding engine fill the status's `resource` block; read at each status request.
   * @example controller.reportResources(() => ({ totalSlotsNum: 64, availSlotsNum: 60, totalBlockNum: 1024, availBlockNum: 900 }));
   */
  reportResources(source: () => ResourceReport): void {
    this.#resources = source;
  }

  /**
   * The engine's part of a role change, awaited between the old role's unlinks and the new links
   * (status RoleSwitching); a failure shows in the status, the role changes anyway.
   * @example controller.onRoleSwitch((from, to) => engine.switchRole(from, to));
   */
  onRoleSwitch(hook: RoleSwitchHook): void {
    this.#switching = hook;
  }

  /**
   * Resolves once every desired link of the current role is up (at once if it is).
   * @example controller.submit(request); await controller.whenReady();
   */
  whenReady(): Promise<void> {
    if (this.roleStatus === 'RoleReady') return Promise.resolve();
    if (this.#closed) return Promise.reject(closing());
    return new Promise((resolve, reject) => this.#waiters.add({ resolve, reject }));
  }

  /** Resolves when no post or retry is queued or running. */
  settled(): Promise<void> {
    return this.#queue.settled();
  }

  /**
   * Follows a runtime event the link manager does not act on: a server that unlinked one of our
   * client links (the manager still lists it as linked).
   * @example controller.handleRuntimeEvent('0', { kind: 'peer-unlinked', side: 'client', remoteClusterId: 7n, code: 0 });
   */
  handleRuntimeEvent(endpoint: string, event: RuntimeLinkEvent): void {
    if (this.#closed || event.kind !== 'peer-unlinked' || event.side !== 'client') return;
    const entry = this.#manager.get(endpoint, event.remoteClusterId);
    const tracked = this.#desired.get(linkKey(endpoint, event.remoteClusterId));
    if (tracked !== undefined && this.#role === 'decode') {
      tracked.stale = entry?.side === 'client' && entry.state === 'linked';
      this.#failed(tracked, LLM_STATUS.LLM_NOT_YET_LINK, 'unlinked by the peer');
      this.#desired.refresh(tracked);
      this.#arm();
    } else if (entry?.side === 'client' && entry.state === 'linked') {
      this.#queue.clear(endpoint, event.remoteClusterId);
    }
  }

  /** Stops retries, drops queued posts, waits for the running one; links are left as they are. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#timer.clear();
    this.#queue.close();
    this.#unsubscribe();
    await this.settled();
    for (const w of this.#waiters) w.reject(closing());
    this.#waiters.clear();
  }

  async #run(job: RoleJob): Promise<void> {
    try {
      if (job.kind === 'post') await this.#applyPost(job);
      else if (job.kind === 'retry') await this.#retryDue();
      else await this.#clear(job.endpoint, job.remoteClusterId);
    } catch (cause) {
      // Link calls report failures as codes; anything thrown is a defect, kept visible in the status.
      this.#error(`${job.kind} failed: ${(cause as Error)?.message ?? String(cause)}`);
      console.error('pdlink: role driver', cause);
    }
    this.#checkReady();
  }

  async #applyPost(job: RolePostJob): Promise<void> {
    const role = job.request.role;
    const from = this.#role;
    this.#applying = role;
    try {
      if (from !== undefined && from !== role) {
        this.#setPlan([]);
        await this.#manager.idle();
        await this.#unlink(this.#local().filter((e) => e.state === 'linked' || e.state === 'failed'));
        const left = this.#local().length;
        if (left > 0) this.#error(`${left} link(s) still held after unlinking for the role change`);
      }
      if (from !== role) {
        await this.#switchEngine(from, role);
        this.#role = role;
        this.#metrics.switched(from ?? 'none', role);
      }
      this.#setPlan(job.plan);
      this.#readySince = job.acceptedAt;
      // Decode owns its client links (one per desired peer device, at the desired address); prefill
      // judges the server links its clients made, by cluster alone.
      const side = role === 'decode' ? 'client' : 'server';
      await this.#unlink(diffLinks(this.#desired.plans(), this.#local(), { side }).unlink);
      if (role === 'decode') await this.#attempt(this.#desired.all());
    } finally {
      this.#applying = undefined;
    }
  }

  async #switchEngine(from: Role | undefined, to: Role): Promise<void> {
    try {
      await this.#switching?.(from, to);
    } catch (cause) {
      this.#error(`the engine's role switch to ${to} failed: ${(cause as Error)?.message ?? String(cause)}`);
    }
  }

  #setPlan(plan: readonly PlannedLink[]): void {
    this.#desired.replace(plan);
    this.#arm();
  }

  async #retryDue(): Promise<void> {
    if (this.#role === 'decode') await this.#attempt(this.#desired.due(this.#clock.now()), true);
  }

  async #clear(endpoint: string, remoteClusterId: bigint): Promise<void> {
    const entry = this.#manager.get(endpoint, remoteClusterId);
    if (entry?.side === 'client' && entry.state === 'linked' && this.#desired.get(linkKey(endpoint, remoteClusterId)) === undefined)
      await this.#unlink([entry]);
  }

  /** Links every given desired link that is not up, clearing a failed or stale local end first. */
  async #attempt(tracked: readonly Tracked[], retry = false): Promise<void> {
    const byKey = new Map(tracked.map((t) => [t.plan.key, t]));
    const of = (plan: PlannedLink) => byKey.get(plan.key)!;
    const diff = diffLinks(
      tracked.map((t) => t.plan),
      this.#manager.list(),
      { side: 'client', stale: (plan) => of(plan).stale },
    );
    for (const plan of diff.up) this.#desired.succeeded(of(plan));
    for (const plan of diff.busy) this.#desired.postpone(of(plan));
    const clear: LinkRef[] = diff.clear;
    const link = diff.link.map(of);
    if (retry) this.#metrics.retried(link.length);
    for (const t of link) this.#desired.hold(t.plan.key);
    try {
      await this.#unlink(clear);
      for (const t of link) t.stale = false;
      const codes = await linkAll(
        this.#manager,
        link.map((t) => t.plan),
        this.#timeoutMs,
      );
      link.forEach((t, i) => {
        // Up only when the manager holds it linked: ALREADY_LINK may be a peer that still holds its
        // end of an earlier link (forced unlink here) and refuses, and a link may be lost at once.
        const code = codes[i] ?? LLM_STATUS.LLM_FAILED;
        const entry = this.#manager.get(t.plan.endpoint, t.plan.remoteClusterId);
        if (entry?.state === 'linked') this.#desired.succeeded(t);
        else if (code !== LLM_STATUS.LLM_SUCCESS) this.#failed(t, code, 'link failed');
        else this.#failed(t, entry?.state === 'failed' ? entry.code : LLM_STATUS.LLM_NOT_YET_LINK, 'lost after linking');
      });
    } finally {
      for (const t of link) {
        this.#desired.release(t.plan.key);
        if (this.#desired.isCurrent(t)) this.#desired.refresh(t);
      }
      this.#arm();
    }
  }

  /** Unlinks (force as the fallback), marking the links busy so their events are not taken for failures. */
  async #unlink(refs: readonly LinkRef[]): Promise<void> {
    if (refs.length === 0) return;
    const keys = refs.map((e) => linkKey(e.endpoint, e.remoteClusterId));
    for (const k of keys) this.#desired.hold(k);
    try {
      for (const { ref, code } of await unlinkAll(this.#manager, refs, this.#timeoutMs)) {
        this.#error(`unlink of cluster ${ref.remoteClusterId} on device ${ref.endpoint} failed: ${statusName(code)}`);
      }
    } finally {
      for (const k of keys) this.#desired.release(k);
    }
  }

  #onLinkEvent(event: LinkEvent): void {
    if (this.#closed) return;
    const tracked = this.#desired.get(linkKey(event.endpoint, event.remoteClusterId));
    if (tracked === undefined) return;
    // Changes the driver did not make (a lost peer, an unusable link, a hand-made unlink) start the retry.
    if (!this.#desired.isBusy(tracked.plan.key) && this.#role === 'decode') {
      if (event.to === 'linked') this.#desired.succeeded(tracked);
      else if (event.to === 'failed' || event.to === 'unlinked') {
        this.#failed(tracked, event.code === LLM_STATUS.LLM_SUCCESS ? LLM_STATUS.LLM_NOT_YET_LINK : event.code, event.reason);
        this.#arm();
      }
    }
    this.#desired.refresh(tracked);
    this.#checkReady();
  }

  #failed(t: Tracked, code: number, why: string): void {
    this.#desired.failed(t, code);
    this.#error(
      `link to ${t.plan.target ?? 'peer'} device ${t.plan.device} (cluster ${t.plan.remoteClusterId}): ${why}: ${statusName(code)}`,
    );
  }

  #error(message: string): void {
    this.#lastError = { message, at: this.#clock.now() };
  }

  #checkReady(): void {
    if (this.roleStatus !== 'RoleReady') return;
    if (this.#readySince !== undefined) {
      this.#metrics.observeReady(Math.max(0, this.#clock.now() - this.#readySince) / 1000);
      this.#readySince = undefined;
    }
    for (const w of this.#waiters) w.resolve();
    this.#waiters.clear();
  }

  /** Keeps the retry timer armed for the earliest scheduled retry (decode only). */
  #arm(): void {
    this.#timer.set(!this.#closed && this.#role === 'decode' ? this.#desired.nextDue() : undefined);
  }

  #local(): LinkInfo[] {
    return this.#manager.list().filter((e) => this.#endpoints.has(e.endpoint));
  }
}
