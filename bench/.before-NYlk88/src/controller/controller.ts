/**
 * The control loop that turns agents and Coordinators into a cluster that runs itself: it gives
 * every instance its role and group peers (reposting until 200), polls each agent's status, counts
 * an instance ready once RoleReady, and keeps every Coordinator's topology equal to what is
 * serving — a full snapshot every synchronization period and at once after any change. Faults
 * (an agent silent past the heartbeat timeout) and planned removals (drain, then unlink) change
 * the peers it posts. No HTTP routes here: src/http/controller.ts serves this object.
 */
import { errors } from '../core/errors.ts';
import { assignRoles, groupOf, peersOf } from './assign.ts';
import { readAgentStatus, shapeChanged, type AgentResources } from './agent-status.ts';
import { CoordinatorSet, type CoordinatorView } from './coordinators.ts';
import { Member, type MemberState } from './member.ts';
import { ManagementClient, type Outgoing } from './outgoing.ts';
import type { ClientTlsOptions } from '../core/tls-options.ts';
import { composeSnapshot, type RefreshBody, type SnapshotCandidate } from './snapshot.ts';
import type { StoredState } from './stored-state.ts';
import type { TopologySpec, ControllerTiming, DesiredInstance, PdRates } from './types.ts';

export interface ControllerEvents {
  rolePost?(ok: boolean): void;
  snapshotPush?(ok: boolean): void;
  /** One evaluation of the whole cluster took this long (ms). */
  evaluated?(ms: number): void;
  /** A snapshot is about to go to the Coordinators (the leader keeps it in the store). */
  composed?(snapshot: RefreshBody, generation: number): void;
}

export interface ControllerOptions {
  readonly spec: TopologySpec;
  /** Outgoing calls (default: a client with the spec's HTTP timeout). */
  readonly client?: Outgoing;
  /** The default client's TLS (ignored with `client`). */
  readonly clientTls?: ClientTlsOptions;
  readonly now?: () => number;
  readonly events?: ControllerEvents;
  /** One line per notable change (default: none). */
  readonly log?: (line: string) => void;
  /** Whether it acts (posts roles, pushes snapshots) from the start (default true); a standby waits for lead(). */
  readonly leading?: boolean;
}

export interface MemberView {
  readonly id: number;
  readonly role: string;
  readonly group: number;
  readonly state: MemberState;
  readonly reachable: boolean;
  readonly lastSeenAt: number | undefined;
  readonly roleStatus: string | undefined;
  readonly desiredPeers: readonly number[];
  readonly linkedPeers: readonly number[];
  readonly inSnapshot: boolean;
  readonly lastError: { readonly message: string; readonly at: number } | undefined;
  readonly inferenceUrl: string;
  /** What the agent last reported free and in total, when it reports it. */
  readonly resources: AgentResources | undefined;
  /** Desired peer id → code of its failed link, as the agent last reported. */
  readonly failedLinks: ReadonlyMap<number, string>;
}

/** What the Controller shows of itself (`GET /v1/cluster`): the desired state, the observed one, each member. */
export interface ControllerView {
  readonly coordinators: readonly CoordinatorView[];
  readonly timing: ControllerTiming;
  readonly rates: PdRates;
  readonly desired: readonly DesiredInstance[];
  readonly snapshotIds: readonly number[];
  readonly members: readonly MemberView[];
}

export class Controller {
  readonly #timing: ControllerTiming;
  readonly #rates: PdRates;
  readonly #client: Outgoing;
  readonly #now: () => number;
  readonly #events: ControllerEvents;
  readonly #log: (line: string) => void;
  readonly #members = new Map<number, Member>();
  readonly #coordinators: CoordinatorSet;
  /** The snapshot's shape (everything but free slots/blocks) last sent, to push at once on change. */
  #shapeKey = '';
  /** Something the snapshot's shape depends on may have changed; composing is the costly part of an evaluation. */
  #dirty = true;
  /** Inference and management addresses, parsed once per spec. */
  readonly #addresses = new WeakMap<DesiredInstance, { ip: string; port: number; metricPort: number }>();
  #snapshot: RefreshBody = { ids: [], instances: [] };
  #timers: ReturnType<typeof setInterval>[] = [];
  #closed = false;
  /** Only a leader posts roles and pushes snapshots; a standby polls, so it is warm when it takes over. */
  #leading: boolean;
  /** Event mark of the takeover: no role goes to an agent before a status read after it. */
  #takeoverMark = 0;
  /** Snapshots sent so far, across leaders (a new leader continues from the stored count). */
  #generation = 0;

  /** @example const controller = new Controller({ spec }); controller.start(); */
  constructor(options: ControllerOptions) {
    this.#timing = options.spec.timing;
    this.#rates = options.spec.rates;
    this.#client = options.client ?? new ManagementClient(this.#timing.httpTimeoutMs, options.clientTls);
    this.#now = options.now ?? Date.now;
    this.#events = options.events ?? {};
    this.#log = options.log ?? (() => {});
    this.#leading = options.leading ?? true;
    this.#coordinators = new CoordinatorSet(options.spec.coordinators, {
      client: this.#client,
      now: this.#now,
      snapshot: () => this.#snapshot,
      ...(this.#events.snapshotPush === undefined ? {} : { onPush: this.#events.snapshotPush }),
    });
    for (const spec of options.spec.instances) this.#members.set(spec.id, new Member(spec, spec.role ?? 'prefill'));
    this.#replan();
  }

  /** Starts polling and the periodic snapshot. */
  start(): void {
    if (this.#timers.length > 0 || this.#closed) return;
    this.#timers.push(setInterval(() => this.tick(), this.#timing.statusPollMs));
    // The periodic snapshot carries fresh free slots/blocks, so it is composed anew.
    this.#timers.push(setInterval(() => void this.sync(), this.#timing.syncMs));
    this.tick();
  }

  /** One poll round: every agent's status and every Coordinator's readiness, then an evaluation. */
  tick(): void {
    if (this.#closed) return;
    for (const member of this.#members.values()) if (!member.polling) void this.#poll(member);
    if (this.#leading) this.#coordinators.probe();
    this.evaluate();
  }

  /**
   * Adds an instance at run time; a conflict (id or server_ip taken) changes nothing.
   * @example controller.add(instance);
   */
  add(spec: DesiredInstance): void {
    const existing = this.#members.get(spec.id);
    if (existing !== undefined) throw errors.conflictWith(`instance ${spec.id} already exists${existing.drain ? ' (draining)' : ''}`, 'id');
    const sameIp = [...this.#members.values()].find((m) => m.spec.serverIp === spec.serverIp);
    if (sameIp !== undefined) throw errors.conflictWith(`server_ip ${spec.serverIp} is already instance ${sameIp.id}'s`, 'server_ip');
    this.#members.set(spec.id, new Member(spec, spec.role ?? 'prefill'));
    this.#replan();
    this.#dirty = true;
    this.#log(`instance ${spec.id} added`);
    this.evaluate();
  }

  /**
   * Removes an instance by draining it: it leaves the snapshot at once, its requests finish
   * (bounded by the drain timeout), then its peers get role posts without it. Resolves when done.
   * @example await controller.remove(201);
   */
  remove(id: number): Promise<void> {
    const member = this.#members.get(id);
    if (member === undefined) throw errors.notFound(`instance ${id}`);
    if (member.drain === undefined) {
      member.drain = { requestedAt: this.#now(), pushed: false, snapshotMark: undefined, done: Promise.withResolvers<void>() };
      this.#log(`instance ${id} draining`);
      this.#dirty = true;
      this.evaluate();
    }
    return member.drain.done.promise;
  }

  /**
   * Applies a changed topology as a diff: new ids added, missing ones drained away, changed ones
   * updated (a new role or devices means a new role post).
   * @example controller.apply(previousFileSpec, nextFileSpec);
   */
  apply(previous: TopologySpec, next: TopologySpec): void {
    this.#coordinators.urls = next.coordinators;
    const before = new Map(previous.instances.map((i) => [i.id, i]));
    const after = new Map(next.instances.map((i) => [i.id, i]));
    for (const [id] of before) if (!after.has(id) && this.#members.has(id)) void this.remove(id);
    for (const [id, spec] of after) {
      const member = this.#members.get(id);
      if (member === undefined) this.#members.set(id, new Member(spec, spec.role ?? 'prefill'));
      else if (JSON.stringify(before.get(id)) !== JSON.stringify(spec)) {
        if (spec.role !== undefined && spec.role !== member.role) member.lostRole();
        member.spec = spec;
        if (spec.role !== undefined) member.role = spec.role;
      }
    }
    this.#replan();
    this.#dirty = true;
    this.evaluate();
  }

  /**
   * Composes the snapshot anew (fresh free slots/blocks) and sends it to every Coordinator; true
   * when all took it. The synchronization period calls this.
   * @example await controller.sync();
   */
  sync(): Promise<boolean> {
    if (!this.#leading) return Promise.resolve(false);
    return this.#compose(this.#now(), true);
  }

  /** The snapshot as last composed. */
  snapshot(): RefreshBody {
    return this.#snapshot;
  }

  /** Desired, observed and per-instance state, for `GET /v1/cluster`. */
  view(): ControllerView {
    const now = this.#now();
    const inSnapshot = new Set(this.#snapshot.ids);
    const members = [...this.#members.values()]
      .sort((a, b) => a.id - b.id)
      .map((m): MemberView => ({
        id: m.id,
        role: m.role,
        group: m.group,
        state: this.#stateOf(m, now, inSnapshot),
        reachable: m.alive(now, this.#timing.heartbeatTimeoutMs),
        lastSeenAt: m.lastSeenAt,
        roleStatus: m.observation?.roleStatus,
        desiredPeers: m.peers,
        linkedPeers: this.#linkedPeers(m),
        inSnapshot: inSnapshot.has(m.id),
        lastError: m.lastError,
        inferenceUrl: m.spec.inferenceUrl,
        resources: m.observation?.resources,
        failedLinks: this.#failedLinks(m),
      }));
    return {
      coordinators: this.#coordinators.views(),
      timing: this.#timing,
      rates: this.#rates,
      desired: [...this.#members.values()].filter((m) => m.drain === undefined).map((m) => m.spec),
      snapshotIds: this.#snapshot.ids,
      members,
    };
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Snapshots sent so far, across leaders. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * Takes over from a stored state: the stored desired instances replace the file's, each member
   * gets its stored role and the role body in force, and roles go out only where a status read
   * after this call shows the agent lacks them.
   * @example controller.lead({ desired, assignments, generation });
   */
  lead(state: StoredState): void {
    if (this.#closed) return;
    if (state.desired !== undefined) {
      const wanted = new Map(state.desired.map((d) => [d.id, d]));
      for (const id of [...this.#members.keys()]) if (!wanted.has(id)) this.#members.delete(id);
      for (const [id, spec] of wanted) if (!this.#members.has(id)) this.#members.set(id, new Member(spec, spec.role ?? 'prefill'));
    }
    for (const a of state.assignments) {
      const m = this.#members.get(a.id);
      if (m === undefined || (m.spec.role !== undefined && m.spec.role !== a.role)) continue;
      m.role = a.role;
      m.group = a.group;
      m.postedKey = a.postedKey;
      // A non-empty wanted key keeps the role through the replan (see #replan).
      m.wantedKey = a.postedKey ?? `${a.role} stored`;
      m.joined = a.joined && a.postedKey !== undefined;
    }
    this.#generation = Math.max(this.#generation, state.generation);
    this.#takeoverMark = this.#mark();
    this.#replan();
    for (const m of this.#members.values()) if (m.postedKey !== m.wantedKey) m.joined = false;
    this.#shapeKey = '';
    this.#dirty = true;
    this.#leading = true;
    this.#log(`leading from stored state (${state.assignments.length} assignments, generation ${this.#generation})`);
    this.evaluate();
  }

  /** Stops acting (another controller leads); polling goes on so a later takeover starts warm. */
  follow(): void {
    if (!this.#leading) return;
    this.#leading = false;
    this.#log('standing by');
  }

  /** What a leader keeps in the store: the desired instances and every member's assignment. */
  storedState(): StoredState {
    const members = [...this.#members.values()];
    return {
      desired: members.filter((m) => m.drain === undefined).map((m) => m.spec),
      assignments: members.map((m) => ({ id: m.id, role: m.role, group: m.group, postedKey: m.postedKey, joined: m.joined })),
      generation: this.#generation,
    };
  }

  /** Stops the loop and waits for snapshot pushes in flight; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    if (this.#evaluating !== undefined) clearImmediate(this.#evaluating);
    await this.#coordinators.idle();
    for (const m of this.#members.values()) m.drain?.done.resolve();
  }

  /**
   * Re-reads every fact and acts: heartbeats, restarts, readiness, drains, role posts, and a
   * snapshot push when its shape changed. Cheap enough to run after every observation.
   */
  evaluate(): void {
    if (this.#closed) return;
    const started = performance.now();
    const now = this.#now();
    let replan = false;
    for (const m of this.#members.values()) {
      const wasJoined = m.joined;
      if (m.lastSeenAt !== undefined && !m.alive(now, this.#timing.heartbeatTimeoutMs) && (m.postedKey !== undefined || m.joined)) {
        m.lostRole();
        m.error(`no status answer for ${now - m.lastSeenAt} ms (heartbeat timeout ${this.#timing.heartbeatTimeoutMs} ms)`, now);
        this.#log(`instance ${m.id} down`);
      }
      if (m.forgotRole()) {
        this.#log(`instance ${m.id} lost its role (restarted?)`);
        m.lostRole();
      }
      if (!m.joined && m.readyInRole()) {
        m.joined = true;
        this.#log(`instance ${m.id} ready as ${m.role}`);
      }
      if (wasJoined !== m.joined) replan = true;
      if (this.#leading && m.drain !== undefined && this.#drained(m, now)) {
        this.#finishDrain(m);
        replan = true;
      }
    }
    if (replan || this.#aliveChanged(now)) {
      this.#replan();
      this.#dirty = true;
    }
    if (this.#leading) {
      this.#postRoles(now);
      if (this.#dirty) void this.#compose(now, false);
    }
    this.#events.evaluated?.(performance.now() - started);
  }

  #aliveKey = '';
  #marks = 0;

  /** The next event mark (see Member.postDoneMark). */
  #mark(): number {
    return ++this.#marks;
  }
  #evaluating: ReturnType<typeof setImmediate> | undefined;

  /** Answers arriving in one turn of the event loop share one evaluation (O(N) each, N answers per poll). */
  #evaluateSoon(): void {
    this.#evaluating ??= setImmediate(() => {
      this.#evaluating = undefined;
      this.evaluate();
    });
  }

  #aliveChanged(now: number): boolean {
    const key = [...this.#members.values()]
      .filter((m) => m.alive(now, this.#timing.heartbeatTimeoutMs))
      .map((m) => m.id)
      .join(',');
    if (key === this.#aliveKey) return false;
    this.#aliveKey = key;
    return true;
  }

  /** Roles, groups and desired peers of every member, and the role body each should hold. */
  #replan(): void {
    const now = this.#now();
    // Draining members keep their links (and so their place in peers' bodies) until drained.
    const active = [...this.#members.values()];
    // A role once given is kept, so a scale-out never flips a serving instance's role.
    const roles = assignRoles(
      active.map((m) => ({ id: m.id, role: m.spec.role ?? (m.wantedKey === '' ? undefined : m.role) })),
      this.#rates,
    );
    const placements = groupOf(roles);
    const peers = peersOf(placements);
    for (const m of active) {
      const placement = placements.get(m.id)!;
      if (m.role !== placement.role) m.lostRole();
      m.role = placement.role;
      m.group = placement.group;
      m.peers = peers.get(m.id) ?? [];
      // Only peers that answer are posted: a dead P left in a D's desired set would keep D from RoleReady.
      const live = m.peers.map((id) => this.#members.get(id)!).filter((p) => p.alive(now, this.#timing.heartbeatTimeoutMs));
      const body = {
        local: { server_ip: m.spec.serverIp, device: devicesOf(m.spec) },
        peers: live.map((p) => ({ server_ip: p.spec.serverIp, device: devicesOf(p.spec) })),
      };
      m.wantedBody = body;
      m.wantedKey = `${m.role} ${JSON.stringify(body)}`;
    }
  }

  #postRoles(now: number): void {
    for (const m of this.#members.values()) {
      if (m.postInFlight || m.postedKey === m.wantedKey || now < m.nextPostAt) continue;
      // After a takeover, what the agent holds is read first: a role already in force is not posted again.
      if (m.observedMark <= this.#takeoverMark) continue;
      if (!m.alive(now, this.#timing.heartbeatTimeoutMs)) continue;
      // P first: a P must want a D before that D links to it, or it would drop the link as unwanted.
      if (m.role === 'decode' && m.peers.some((id) => this.#members.get(id)?.postInFlight === true)) continue;
      void this.#post(m);
    }
  }

  async #post(m: Member): Promise<void> {
    const key = m.wantedKey;
    m.postInFlight = true;
    let ok = false;
    try {
      const { status, body } = await this.#client.post(`${m.spec.manageUrl}/v1/role/${m.role}`, m.wantedBody);
      const result = typeof body === 'object' && body !== null ? (body as { result?: unknown }).result : undefined;
      ok = status === 200 && typeof result === 'string' && result.toLowerCase() === 'ok';
      if (!ok) m.error(`role post answered ${status}: ${JSON.stringify(body)}`, this.#now());
    } catch (err) {
      m.error(`role post failed: ${err instanceof Error ? err.message : String(err)}`, this.#now());
    } finally {
      m.postInFlight = false;
      m.postDoneMark = this.#mark();
    }
    this.#events.rolePost?.(ok);
    if (ok) m.postedKey = key;
    else m.nextPostAt = this.#now() + this.#timing.roleRetryMs;
    this.#evaluateSoon();
  }

  async #poll(m: Member): Promise<void> {
    m.polling = true;
    const from = this.#mark();
    try {
      const { status, body } = await this.#client.get(`${m.spec.manageUrl}/v1/status`);
      const observation = status === 200 ? readAgentStatus(body) : undefined;
      if (observation === undefined) throw new Error(`status answered ${status}`);
      const wasAlive = m.alive(this.#now(), this.#timing.heartbeatTimeoutMs);
      if (shapeChanged(m.observation, observation)) this.#dirty = true;
      m.lastSeenAt = this.#now();
      m.observation = observation;
      m.observedMark = from;
      // Back from the dead (or first seen): its role goes now, not at the next retry.
      if (!wasAlive) m.nextPostAt = 0;
    } catch {
      // Silence is what the heartbeat counts; nothing else to do here.
    } finally {
      m.polling = false;
    }
    this.#evaluateSoon();
  }

  #drained(m: Member, now: number): boolean {
    const drain = m.drain!;
    if (drain.snapshotMark === undefined) return false;
    if (!m.alive(now, this.#timing.heartbeatTimeoutMs)) return true;
    return m.idle(drain.snapshotMark) || now - drain.requestedAt >= this.#timing.drainTimeoutMs;
  }

  #finishDrain(m: Member): void {
    this.#members.delete(m.id);
    this.#log(`instance ${m.id} drained and removed`);
    // Its own side unlinks too; best effort, the instance is leaving anyway.
    const url = `${m.spec.manageUrl}/v1/role/${m.role}`;
    this.#client.post(url, { local: { server_ip: m.spec.serverIp, device: devicesOf(m.spec) }, peers: [] }).catch(() => {});
    m.drain!.done.resolve();
  }

  #linkedPeers(m: Member): number[] {
    const o = m.observation;
    if (o === undefined) return [];
    return m.peers.filter((id) => {
      const peer = this.#members.get(id);
      return peer !== undefined && o.linkedPeers.has(peer.spec.serverIp);
    });
  }

  #failedLinks(m: Member): Map<number, string> {
    const failed = new Map<number, string>();
    const o = m.observation;
    if (o === undefined) return failed;
    for (const id of m.peers) {
      const code = o.linkFailures.get(this.#members.get(id)?.spec.serverIp ?? '');
      if (code !== undefined) failed.set(id, code);
    }
    return failed;
  }

  /** Composes the snapshot; pushes it when `always`, or when its shape changed or a drain waits for it. */
  #compose(now: number, always: boolean): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    this.#dirty = false;
    const candidates: SnapshotCandidate[] = [];
    for (const m of this.#members.values()) {
      if (m.drain !== undefined || !m.joined || !m.alive(now, this.#timing.heartbeatTimeoutMs)) continue;
      candidates.push({
        id: m.id,
        role: m.role,
        group: m.group,
        ...this.#addressOf(m.spec),
        modelName: m.spec.modelName,
        staticInfo: m.spec.staticInfo,
        resources: m.observation?.resources,
        linkedPeers: this.#linkedPeers(m),
      });
    }
    this.#snapshot = composeSnapshot(candidates);
    const shape = JSON.stringify(this.#snapshot.instances.map((i) => [i.id, i.static_info, i.dynamic_info.peers]));
    // A drain waits for a snapshot without its instance to reach the Coordinators, even if the
    // instance was not in the last one.
    const draining = [...this.#members.values()].filter((m) => m.drain !== undefined && !m.drain.pushed);
    if (shape === this.#shapeKey && draining.length === 0 && !always) return Promise.resolve(true);
    this.#shapeKey = shape;
    this.#generation += 1;
    this.#events.composed?.(this.#snapshot, this.#generation);
    for (const m of draining) m.drain!.pushed = true;
    return this.#coordinators.pushAll().then((ok) => {
      // Coordinators that could not be told are not waited for: the drain timeout bounds them.
      const mark = this.#mark();
      for (const m of draining) if (m.drain!.snapshotMark === undefined) m.drain!.snapshotMark = mark;
      if (draining.length > 0) this.#evaluateSoon();
      return ok;
    });
  }

  #addressOf(spec: DesiredInstance): { ip: string; port: number; metricPort: number } {
    let address = this.#addresses.get(spec);
    if (address === undefined) {
      const inference = new URL(spec.inferenceUrl);
      const manage = new URL(spec.manageUrl);
      const port = (u: URL) => Number(u.port || (u.protocol === 'https:' ? 443 : 80));
      address = { ip: inference.hostname.replace(/^\[|\]$/g, ''), port: port(inference), metricPort: port(manage) };
      this.#addresses.set(spec, address);
    }
    return address;
  }

  #stateOf(m: Member, now: number, inSnapshot: ReadonlySet<number>): MemberState {
    if (m.drain !== undefined) return 'draining';
    if (!m.alive(now, this.#timing.heartbeatTimeoutMs)) return m.lastSeenAt === undefined ? 'unreachable' : 'down';
    if (m.postedKey !== m.wantedKey) return 'posting';
    if (!m.joined) return 'linking';
    if (inSnapshot.has(m.id)) return 'serving';
    const livePeers = m.peers.filter((id) => this.#members.get(id)?.alive(now, this.#timing.heartbeatTimeoutMs) === true);
    // MindIE counts a D linked to none of its P as faulty.
    if (m.role === 'decode' && livePeers.length > 0 && this.#linkedPeers(m).length === 0) return 'faulty';
    return 'waiting';
  }
}

function devicesOf(spec: DesiredInstance): { device_logical_id: string; device_ip: string }[] {
  return spec.devices.map((d) => ({ device_logical_id: d.logicalId, device_ip: d.ip }));
}
