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
 * Posts queue behind the one being applied; consecutive queued posts of the same role collapse
 * into the latest, whose desired set wins either way.
 */
import { errors } from '../errors.ts';
import { systemClock, type LeaseClock } from '../ledger/lease-clock.ts';
import type { IpPort } from '../links/endpoint.ts';
import { DEFAULT_TIMEOUT_MS, MAX_CLUSTERS_PER_CALL, type LinkManager } from '../links/manager.ts';
import { LLM_STATUS, statusName } from '../links/status.ts';
import type { CallResult, EndpointTarget, LinkEvent, LinkInfo, RuntimeLinkEvent } from '../links/types.ts';
import type { Registry } from '../metrics.ts';
import { DEFAULT_LINK_BASE_PORT } from '../schema/instance-config.ts';
import type { Role, RoleRequest } from '../schema/role.ts';
import { createRoleMetrics, type RoleMetrics } from './role-metrics.ts';
import { linkKey, planLinks, type LocalDevice, type PlannedLink } from './role-plan.ts';
import { retryDelay, retryPolicy, type RetryPolicy } from './role-retry.ts';
import { linkView, statusBody, type RoleStatusName, type StatusBody } from './status.ts';

/** Posts that may wait behind the one being applied; more answer 429. */
export const MAX_QUEUED_POSTS = 64;

/** Unlink outcomes after which the local end is gone. */
const UNLINK_DONE: ReadonlySet<number> = new Set([LLM_STATUS.LLM_SUCCESS, LLM_STATUS.LLM_NOT_YET_LINK, LLM_STATUS.LLM_NOTIFY_PROMPT_UNLINK_FAILED]);
/** Link outcomes after which the link is up. */
const LINK_DONE: ReadonlySet<number> = new Set([LLM_STATUS.LLM_SUCCESS, LLM_STATUS.LLM_ALREADY_LINK]);
/** Unlink is keyed by cluster id; a server-side link whose peer address is not known yet has none. */
const NO_ADDRESS: IpPort = { ip: '', port: 0 };

export interface RoleControllerOptions {
  readonly manager: LinkManager;
  /** The agent's device contexts; a post's local devices must be among them. */
  readonly devices: readonly LocalDevice[];
  /** Shared by every agent of the deployment: peer device d listens on its ip at base + d. */
  readonly linkBasePort?: number;
  /** Timeout of each link/unlink call (default 3000 ms). */
  readonly linkTimeoutMs?: number;
  readonly retry?: Partial<RetryPolicy>;
  /** Time and timers (tests pass a ManualClock). */
  readonly clock?: LeaseClock;
  readonly random?: () => number;
  readonly metrics?: Registry;
}

interface Tracked {
  plan: PlannedLink;
  failures: number;
  lastCode: number | undefined;
  nextAttemptAt: number | undefined;
  /** Listed as linked by the manager, but the peer has unlinked it. */
  stale: boolean;
}

type Job =
  | { readonly kind: 'post'; readonly request: RoleRequest; readonly plan: readonly PlannedLink[]; readonly acceptedAt: number }
  | { readonly kind: 'retry' }
  | { readonly kind: 'clear'; readonly endpoint: string; readonly remoteClusterId: bigint };

type Unlinkable = Pick<LinkInfo, 'endpoint' | 'remoteClusterId' | 'remote'>;

export class RoleController {
  readonly #manager: LinkManager;
  readonly #devices: readonly LocalDevice[];
  readonly #endpoints: ReadonlySet<string>;
  readonly #basePort: number;
  readonly #timeoutMs: number;
  readonly #policy: RetryPolicy;
  readonly #clock: LeaseClock;
  readonly #random: () => number;
  readonly #metrics: RoleMetrics;
  readonly #unsubscribe: () => void;
  #role: Role | undefined;
  #applying: Role | undefined;
  #links = new Map<string, Tracked>();
  /** Desired links not currently up; RoleReady needs it empty. */
  readonly #down = new Set<string>();
  /** Links this driver is linking or unlinking right now (nested holds counted): their events are its own doing. */
  readonly #busy = new Map<string, number>();
  readonly #queue: Job[] = [];
  #running: Promise<void> | undefined;
  #timer: { handle: unknown; due: number } | undefined;
  /** Acceptance time of the last applied post until RoleReady is reached. */
  #readySince: number | undefined;
  #lastError: { message: string; at: number } | undefined;
  readonly #waiters = new Set<{ resolve: () => void; reject: (err: Error) => void }>();
  #closed = false;

  constructor(options: RoleControllerOptions) {
    const basePort = options.linkBasePort ?? DEFAULT_LINK_BASE_PORT;
    if (!Number.isInteger(basePort) || basePort < 1 || basePort > 65535) throw new RangeError('linkBasePort must be an integer in [1, 65535]');
    const timeoutMs = options.linkTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2 ** 31 - 1) throw new RangeError('linkTimeoutMs must be an integer in [1, 2^31 - 1]');
    this.#manager = options.manager;
    this.#devices = options.devices;
    this.#endpoints = new Set(options.devices.map((d) => d.endpoint));
    this.#basePort = basePort;
    this.#timeoutMs = timeoutMs;
    this.#policy = retryPolicy(options.retry);
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#metrics = createRoleMetrics(options.metrics, () => ({ desired: this.#links.size, linked: this.#links.size - this.#down.size }));
    this.#unsubscribe = this.#manager.onChange((event) => this.#onLinkEvent(event));
  }

  /**
   * Accepts a validated role request: throws the 422 (or 429) to answer, else queues it and
   * returns at once; reconciliation runs in the background.
   * @example controller.submit(toRoleRequest('decode', body));
   */
  submit(request: RoleRequest): void {
    if (this.#closed) throw errors.unavailable('the instance agent is shutting down');
    const { links, issues } = planLinks(request, this.#devices, this.#basePort);
    if (issues.length > 0) throw errors.unprocessable(issues);
    const job: Job = { kind: 'post', request, plan: links, acceptedAt: this.#clock.now() };
    const last = this.#queue.at(-1);
    if (last?.kind === 'post' && last.request.role === request.role) this.#queue[this.#queue.length - 1] = job;
    else if (this.#queue.filter((j) => j.kind === 'post').length >= MAX_QUEUED_POSTS) throw errors.tooManyRequests(MAX_QUEUED_POSTS);
    else this.#queue.push(job);
    this.#metrics.posted(request.role);
    this.#kick();
  }

  /** The current role, or undefined before the first post has been applied. */
  get role(): Role | undefined {
    return this.#role;
  }

  get roleStatus(): RoleStatusName {
    if (this.#applying !== undefined || this.#queue.some((j) => j.kind === 'post')) return 'RoleSwitching';
    if (this.#role === undefined) return 'RoleUnknown';
    return this.#down.size === 0 ? 'RoleReady' : 'RoleSwitching';
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
      queuedPosts: this.#queue.filter((j) => j.kind === 'post').length,
      lastError: this.#lastError,
      links: [...this.#links.values()].map((t) => ({ plan: t.plan, view: this.#view(t), retry: t })),
      now: this.#clock.now(),
    });
  }

  /**
   * Resolves once every desired link of the current role is up (at once if it is).
   * @example controller.submit(request); await controller.whenReady();
   */
  whenReady(): Promise<void> {
    if (this.roleStatus === 'RoleReady') return Promise.resolve();
    if (this.#closed) return Promise.reject(errors.unavailable('the instance agent is shutting down'));
    return new Promise((resolve, reject) => this.#waiters.add({ resolve, reject }));
  }

  /** Resolves when no post or retry is queued or running. */
  async settled(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /**
   * Follows a runtime event the link manager does not act on: a server that unlinked one of our
   * client links (the manager still lists it as linked).
   * @example controller.handleRuntimeEvent('0', { kind: 'peer-unlinked', side: 'client', remoteClusterId: 7n, code: 0 });
   */
  handleRuntimeEvent(endpoint: string, event: RuntimeLinkEvent): void {
    if (this.#closed || event.kind !== 'peer-unlinked' || event.side !== 'client') return;
    const entry = this.#manager.get(endpoint, event.remoteClusterId);
    const tracked = this.#links.get(linkKey(endpoint, event.remoteClusterId));
    if (tracked !== undefined && this.#role === 'decode') {
      tracked.stale = entry?.side === 'client' && entry.state === 'linked';
      this.#failed(tracked, LLM_STATUS.LLM_NOT_YET_LINK, 'unlinked by the peer');
      this.#refresh(tracked);
      this.#arm();
    } else if (entry?.side === 'client' && entry.state === 'linked') {
      this.#queue.push({ kind: 'clear', endpoint, remoteClusterId: event.remoteClusterId });
      this.#kick();
    }
  }

  /** Stops retries, drops queued posts, waits for the running one; links are left as they are. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#disarm();
    this.#queue.length = 0;
    this.#unsubscribe();
    await this.settled();
    for (const w of this.#waiters) w.reject(errors.unavailable('the instance agent is shutting down'));
    this.#waiters.clear();
  }

  #kick(): void {
    if (this.#running !== undefined || this.#queue.length === 0 || this.#closed) return;
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      this.#kick();
    });
  }

  async #drain(): Promise<void> {
    for (let job = this.#queue.shift(); job !== undefined; job = this.#queue.shift()) {
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
  }

  async #applyPost(job: Extract<Job, { kind: 'post' }>): Promise<void> {
    const role = job.request.role;
    const from = this.#role;
    this.#applying = role;
    try {
      if (from !== undefined && from !== role) {
        this.#setPlan([]);
        await this.#unlinkEverything();
      }
      if (from !== role) {
        this.#role = role;
        this.#metrics.switched(from ?? 'none', role);
      }
      this.#setPlan(job.plan);
      this.#readySince = job.acceptedAt;
      if (role === 'decode') await this.#reconcileDecode();
      else await this.#cleanupPrefill();
    } finally {
      this.#applying = undefined;
    }
  }

  /** Replaces the desired set; links that stay keep their retry state. */
  #setPlan(plan: readonly PlannedLink[]): void {
    const before = this.#links;
    this.#links = new Map(
      plan.map((p) => {
        const old = before.get(p.key);
        return [p.key, old === undefined ? { plan: p, failures: 0, lastCode: undefined, nextAttemptAt: undefined, stale: false } : { ...old, plan: p }];
      }),
    );
    this.#down.clear();
    for (const t of this.#links.values()) this.#refresh(t);
    this.#arm();
  }

  async #unlinkEverything(): Promise<void> {
    await this.#manager.idle();
    await this.#unlink(this.#local().filter((e) => e.state === 'linked' || e.state === 'failed'));
    const left = this.#local();
    if (left.length > 0) this.#error(`${left.length} link(s) still held after unlinking for the role change`);
  }

  async #reconcileDecode(): Promise<void> {
    const stray = this.#local().filter((e) => e.side === 'client' && (e.state === 'linked' || e.state === 'failed') && !this.#wants(e));
    await this.#unlink(stray);
    await this.#attempt([...this.#links.values()]);
  }

  async #cleanupPrefill(): Promise<void> {
    const stray = this.#local().filter((e) => e.side === 'server' && (e.state === 'linked' || e.state === 'failed') && !this.#links.has(linkKey(e.endpoint, e.remoteClusterId)));
    await this.#unlink(stray);
  }

  async #retryDue(): Promise<void> {
    if (this.#role !== 'decode') return;
    const now = this.#clock.now();
    await this.#attempt([...this.#links.values()].filter((t) => t.nextAttemptAt !== undefined && t.nextAttemptAt <= now), true);
  }

  async #clear(endpoint: string, remoteClusterId: bigint): Promise<void> {
    const entry = this.#manager.get(endpoint, remoteClusterId);
    if (entry?.side === 'client' && entry.state === 'linked' && !this.#links.has(linkKey(endpoint, remoteClusterId))) await this.#unlink([entry]);
  }

  /** Links every given desired link that is not up, clearing a failed or stale local end first. */
  async #attempt(tracked: readonly Tracked[], retry = false): Promise<void> {
    const clear: Unlinkable[] = [];
    const link: Tracked[] = [];
    for (const t of tracked) {
      const entry = this.#manager.get(t.plan.endpoint, t.plan.remoteClusterId);
      if (entry?.state === 'linked' && !t.stale) this.#succeeded(t);
      else if (entry?.state === 'linking' || entry?.state === 'unlinking') t.nextAttemptAt = this.#clock.now() + this.#policy.baseMs;
      else {
        if (entry !== undefined) clear.push(entry);
        link.push(t);
      }
    }
    if (retry) this.#metrics.retried(link.length);
    for (const t of link) this.#hold(t.plan.key);
    try {
      await this.#unlink(clear);
      for (const t of link) t.stale = false;
      const codes = await this.#chunked(link.map((t) => t.plan), (targets) => this.#manager.linkClusters(targets, { timeoutMs: this.#timeoutMs }));
      link.forEach((t, i) => {
        const code = codes[i] ?? LLM_STATUS.LLM_FAILED;
        if (LINK_DONE.has(code)) this.#succeeded(t);
        else this.#failed(t, code, 'link failed');
      });
    } finally {
      for (const t of link) {
        this.#release(t.plan.key);
        if (this.#links.get(t.plan.key) === t) this.#refresh(t);
      }
      this.#arm();
    }
  }

  /** Unlinks normally, then forces whatever a normal unlink could not clear. */
  async #unlink(entries: readonly Unlinkable[]): Promise<void> {
    if (entries.length === 0) return;
    const keys = entries.map((e) => linkKey(e.endpoint, e.remoteClusterId));
    for (const k of keys) this.#hold(k);
    try {
      const normal = await this.#chunked(entries, (targets) => this.#manager.unlinkClusters(targets, { timeoutMs: this.#timeoutMs }));
      const stuck = entries.filter((_, i) => !UNLINK_DONE.has(normal[i] ?? LLM_STATUS.LLM_FAILED));
      const forced = await this.#chunked(stuck, (targets) => this.#manager.unlinkClusters(targets, { timeoutMs: this.#timeoutMs, force: true }));
      stuck.forEach((e, i) => {
        const code = forced[i] ?? LLM_STATUS.LLM_FAILED;
        if (!UNLINK_DONE.has(code)) this.#error(`unlink of cluster ${e.remoteClusterId} on device ${e.endpoint} failed: ${statusName(code)}`);
      });
    } finally {
      for (const k of keys) this.#release(k);
    }
  }

  /** Runs `call` on chunks of ≤ 16 targets of one endpoint, all at once; codes in input order. */
  async #chunked(items: readonly Unlinkable[], call: (targets: EndpointTarget[]) => Promise<CallResult>): Promise<number[]> {
    const codes = new Array<number>(items.length).fill(LLM_STATUS.LLM_FAILED);
    const byEndpoint = new Map<string, number[]>();
    items.forEach((item, i) => {
      const list = byEndpoint.get(item.endpoint);
      if (list === undefined) byEndpoint.set(item.endpoint, [i]);
      else list.push(i);
    });
    const chunks: number[][] = [];
    for (const list of byEndpoint.values()) for (let i = 0; i < list.length; i += MAX_CLUSTERS_PER_CALL) chunks.push(list.slice(i, i + MAX_CLUSTERS_PER_CALL));
    await Promise.all(
      chunks.map(async (chunk) => {
        const targets = chunk.map((i): EndpointTarget => {
          const item = items[i]!;
          return { endpoint: item.endpoint, remoteClusterId: item.remoteClusterId, remote: item.remote ?? NO_ADDRESS };
        });
        const result = await call(targets);
        chunk.forEach((i, j) => (codes[i] = result.rets[j] ?? result.ret));
      }),
    );
    return codes;
  }

  #onLinkEvent(event: LinkEvent): void {
    if (this.#closed) return;
    const tracked = this.#links.get(linkKey(event.endpoint, event.remoteClusterId));
    if (tracked === undefined) return;
    if (!this.#busy.has(tracked.plan.key) && this.#role === 'decode') {
      if (event.to === 'linked') this.#succeeded(tracked);
      else if (event.to === 'failed' || event.to === 'unlinked') {
        this.#failed(tracked, event.code === LLM_STATUS.LLM_SUCCESS ? LLM_STATUS.LLM_NOT_YET_LINK : event.code, `${event.reason}`);
        this.#arm();
      }
    }
    this.#refresh(tracked);
    this.#checkReady();
  }

  #hold(key: string): void {
    this.#busy.set(key, (this.#busy.get(key) ?? 0) + 1);
  }

  #release(key: string): void {
    const n = (this.#busy.get(key) ?? 1) - 1;
    if (n > 0) this.#busy.set(key, n);
    else this.#busy.delete(key);
  }

  #succeeded(t: Tracked): void {
    t.failures = 0;
    t.lastCode = undefined;
    t.nextAttemptAt = undefined;
    t.stale = false;
  }

  #failed(t: Tracked, code: number, why: string): void {
    t.failures++;
    t.lastCode = code;
    t.nextAttemptAt = this.#clock.now() + retryDelay(t.failures, this.#policy, this.#random);
    this.#error(`link to ${t.plan.target} device ${t.plan.device} (cluster ${t.plan.remoteClusterId}): ${why}: ${statusName(code)}`);
  }

  #error(message: string): void {
    this.#lastError = { message, at: this.#clock.now() };
  }

  #view(t: Tracked) {
    return linkView(this.#manager.get(t.plan.endpoint, t.plan.remoteClusterId), t, t.stale);
  }

  #refresh(t: Tracked): void {
    if (this.#view(t) === 'ok') this.#down.delete(t.plan.key);
    else this.#down.add(t.plan.key);
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

  /** Keeps one timer armed for the earliest scheduled retry (decode only). */
  #arm(): void {
    let due: number | undefined;
    if (!this.#closed && this.#role === 'decode') {
      for (const t of this.#links.values()) if (t.nextAttemptAt !== undefined && (due === undefined || t.nextAttemptAt < due)) due = t.nextAttemptAt;
    }
    if (due === undefined) return this.#disarm();
    if (this.#timer !== undefined && this.#timer.due <= due) return;
    this.#disarm();
    const handle = this.#clock.setTimer(() => {
      this.#timer = undefined;
      if (!this.#queue.some((j) => j.kind === 'retry')) this.#queue.push({ kind: 'retry' });
      this.#kick();
    }, due - this.#clock.now());
    this.#timer = { handle, due };
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer.handle);
    this.#timer = undefined;
  }

  #local(): LinkInfo[] {
    return this.#manager.list().filter((e) => this.#endpoints.has(e.endpoint));
  }

  #wants(entry: LinkInfo): boolean {
    const t = this.#links.get(linkKey(entry.endpoint, entry.remoteClusterId));
    return t !== undefined && (entry.remote === undefined || (entry.remote.ip === t.plan.remote.ip && entry.remote.port === t.plan.remote.port));
  }
}
