/**
 * The control loop that turns agents and Coordinators into a cluster that runs itself: it gives
 * every instance its role and group peers (reposting until 200), polls each agent's status, counts
 * an instance ready once RoleReady, and keeps every Coordinator's topology equal to what is
 * serving — a full snapshot every synchronization period and at once after any change. Faults
 * (an agent silent past the heartbeat timeout) and planned removals (drain, then unlink) change
 * the peers it posts. No HTTP routes here: src/http/controller.ts serves this object.
 */
import { errors } from '../core/errors.ts';
import { fetchStatus, postRole, unlinkAll } from './agent-calls.ts';
import { shapeChanged } from './agent-status.ts';
import type { ControllerEvents, ControllerOptions } from './controller-options.ts';
import { memberViews, type ControllerView } from './controller-view.ts';
import { CoordinatorSet } from './coordinators.ts';
import { drainFinished } from './drain.ts';
import { Member } from './member.ts';
import { admit, applyInstances } from './membership.ts';
import { ManagementClient, type Outgoing } from './outgoing.ts';
import { aliveKey, planRoles } from './role-plan.ts';
import { AddressBook, snapshotCandidates } from './snapshot-candidates.ts';
import { composeSnapshot, type RefreshBody } from './snapshot.ts';
import type { StoredState } from './stored-state.ts';
import { restoreMembers, storedStateOf } from './takeover.ts';
import type { TopologySpec, ControllerTiming, DesiredInstance, PdRates, TimingDefaults } from './types.ts';

export type { ControllerEvents, ControllerOptions } from './controller-options.ts';
export type { ControllerView, MemberView } from './controller-view.ts';

export class Controller {
  readonly #timing: ControllerTiming;
  readonly #timingDefaults: TimingDefaults | undefined;
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
  readonly #addresses = new AddressBook();
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
    this.#timingDefaults = options.spec.timingDefaults;
    this.#rates = options.spec.rates;
    this.#client = options.client ?? new ManagementClient(this.#timing.httpTimeoutMs, undefined, options.clientTls);
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
    admit(this.#members, spec);
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
    applyInstances(this.#members, previous, next, (id) => void this.remove(id));
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
    const members = memberViews(this.#members, this.#snapshot.ids, this.#now(), this.#timing);
    return {
      coordinators: this.#coordinators.views(),
      timing: this.#timing,
      timingDefaults: this.#timingDefaults,
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
    restoreMembers(this.#members, state);
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
    return storedStateOf(this.#members, this.#generation);
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
      if (this.#leading && m.drain !== undefined && drainFinished(m, now, this.#timing)) {
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
    const key = aliveKey(this.#members, now, this.#timing.heartbeatTimeoutMs);
    if (key === this.#aliveKey) return false;
    this.#aliveKey = key;
    return true;
  }

  /** Roles, groups and desired peers of every member, and the role body each should hold. */
  #replan(): void {
    planRoles(this.#members, this.#rates, this.#now(), this.#timing.heartbeatTimeoutMs);
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
      ok = await postRole(this.#client, m, this.#now);
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
      const observation = await fetchStatus(this.#client, m);
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

  #finishDrain(m: Member): void {
    this.#members.delete(m.id);
    this.#log(`instance ${m.id} drained and removed`);
    // Its own side unlinks too.
    unlinkAll(this.#client, m);
    m.drain!.done.resolve();
  }

  /** Composes the snapshot; pushes it when `always`, or when its shape changed or a drain waits for it. */
  #compose(now: number, always: boolean): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    this.#dirty = false;
    this.#snapshot = composeSnapshot(snapshotCandidates(this.#members, now, this.#timing.heartbeatTimeoutMs, this.#addresses));
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
}
