/**
 * The control loop that turns agents and Coordinators into a cluster that runs itself: it gives
 * every instance its role and group peers (reposting until 200), polls each agent's status, counts
 * an instance ready once RoleReady, and keeps every Coordinator's topology equal to what is
 * serving — a full snapshot every synchronization period and at once after any change. Faults
 * (an agent silent past the heartbeat timeout) and planned removals (drain, then unlink) change
 * the peers it posts. No HTTP routes here: src/http/controller.ts serves this object.
 */
import { pollMember, postWanted, type CallClock } from './agent-calls.ts';
import type { ControllerEvents, ControllerOptions } from './controller-options.ts';
import { controllerView, settingsOf, type ClusterSettings, type ControllerView } from './controller-view.ts';
import { CoordinatorSet } from './coordinators.ts';
import { drainFinished, finishDrain, startDrain } from './drain.ts';
import { refuseClashes } from './conflicts.ts';
import { Member, type DrainOutcome } from './member.ts';
import { admit } from './membership.ts';
import { ManagementClient, type Outgoing } from './outgoing.ts';
import { aliveKey, planRoles, postsDue } from './role-plan.ts';
import { AddressBook, snapshotCandidates } from './snapshot-candidates.ts';
import { composeSnapshot, type RefreshBody } from './snapshot.ts';
import { MoveRunner, type MoveRequest, type MoveStart, type MovesView } from './planner/moves.ts';
import { PLANNER_DEFAULTS } from './planner/settings.ts';
import type { Role } from '../schema/role.ts';
import type { StoredState } from './stored-state.ts';
import { StartGate } from './start-gate.ts';
import { restoreMembers, settleRestored, storedStateOf } from './takeover.ts';
import { applyChange, describeChange, removable, type ApplyOutcome } from './topology-change.ts';
import type { TopologySpec, ControllerTiming, DesiredInstance } from './types.ts';

export type { ControllerEvents, ControllerOptions } from './controller-options.ts';
export type { ControllerView, MemberView } from './controller-view.ts';

export class Controller {
  readonly #timing: ControllerTiming;
  /** The spec besides its timing (max_removed_fraction follows the file). */
  #settings: ClusterSettings;
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
  /** When a leader may act (its lease proven live) and what it may push (no unjudged member dropped). */
  readonly #gate: StartGate;
  /** Snapshots sent so far, across leaders (a new leader continues from the stored count). */
  #generation = 0;
  /** Moves between roles, one at a time (planner/moves.ts). */
  readonly #moves: MoveRunner;

  /** @example const controller = new Controller({ spec }); controller.start(); */
  constructor(options: ControllerOptions) {
    this.#timing = options.spec.timing;
    this.#settings = settingsOf(options.spec);
    this.#client = options.client ?? new ManagementClient(this.#timing.httpTimeoutMs, undefined, options.clientTls);
    this.#now = options.now ?? Date.now;
    this.#events = options.events ?? {};
    this.#log = options.log ?? (() => {});
    this.#leading = options.leading ?? true;
    this.#gate = new StartGate(this.#timing, options.mayAct, this.#leading);
    this.#coordinators = new CoordinatorSet(options.spec.coordinators, {
      client: this.#client,
      now: this.#now,
      snapshot: () => this.#snapshot,
      ...(this.#events.snapshotPush === undefined ? {} : { onPush: this.#events.snapshotPush }),
    });
    for (const spec of options.spec.instances) this.#members.set(spec.id, new Member(spec, spec.role ?? 'prefill'));
    const events = this.#events;
    this.#moves = new MoveRunner(
      options.spec.planner ?? PLANNER_DEFAULTS,
      { changed: (v) => events.moved?.(v), ended: (...a) => events.moveEnded?.(...a) },
      this.#log,
    );
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
    if (this.#acts() && this.#gate.passed) this.#coordinators.probe();
    this.evaluate();
  }

  /**
   * Adds an instance; one its agent or its peers would refuse (conflicts.ts) changes nothing.
   * @example controller.add(instance);
   */
  add(spec: DesiredInstance): void {
    refuseClashes(this.#members, spec);
    admit(this.#members, spec);
    this.#log(`instance ${spec.id} added`);
    this.#changed();
  }

  /**
   * Drains an instance away: out of the snapshot at once, its requests finished (within the drain
   * timeout), then its peers posted without it; 409 past max_removed_fraction unless `force`.
   * @example await controller.remove(201);
   */
  remove(id: number, options: { readonly force?: boolean } = {}): Promise<DrainOutcome> {
    return this.#drain(removable(this.#members, id, this.#settings.maxRemovedFraction, options.force === true));
  }

  /**
   * Moves an instance to another role: drained, switched, ready again (planner/moves.ts); 404, or 409
   * while another move runs, the instance is leaving or down, or its group would fall below its minimum.
   * @example controller.move(101, 'decode', { by: 'operator', reason: 'asked through the API' });
   */
  move(id: number, to: Role, request: MoveRequest): MoveStart {
    const now = this.#now();
    const start = this.#moves.start(this.#members, id, to, request, now, (m) => m.alive(now, this.#timing.heartbeatTimeoutMs));
    if (start.outcome === 'started') this.#changed();
    return start;
  }

  /** The move under way, the last moves, and when each group last ended one. */
  get moves(): MovesView {
    return this.#moves.view(this.#members);
  }

  #drain(member: Member): Promise<DrainOutcome> {
    if (member.drain !== undefined) return member.drain.done.promise;
    const done = startDrain(member, this.#now());
    this.#log(`instance ${member.id} draining`);
    this.#changed();
    return done;
  }

  /**
   * Lays a changed topology over the cluster as a diff, or refuses it whole (topology-change.ts).
   * @example controller.apply(previousFileSpec, nextFileSpec);
   */
  apply(previous: TopologySpec, next: TopologySpec, options: { readonly force?: boolean } = {}): ApplyOutcome {
    const outcome = applyChange(this.#members, previous, next, options.force === true, (m) => void this.#drain(m));
    this.#log(outcome.applied ? `topology change: ${describeChange(outcome.change)}` : `topology change refused: ${outcome.reason}`);
    if (!outcome.applied) return outcome;
    this.#settings = { ...this.#settings, maxRemovedFraction: settingsOf(next).maxRemovedFraction };
    this.#moves.limits = next.planner ?? PLANNER_DEFAULTS;
    this.#coordinators.urls = next.coordinators;
    this.#changed();
    return outcome;
  }

  /** The members changed: roles and groups are planned again and the snapshot composed anew. */
  #changed(): void {
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
    if (!this.#acts()) return Promise.resolve(false);
    return this.#compose(this.#now(), true);
  }

  /** The snapshot as last composed. */
  snapshot(): RefreshBody {
    return this.#snapshot;
  }

  /** Desired, observed and per-instance state, for `GET /v1/cluster`. */
  view(): ControllerView {
    return controllerView(this.#members, this.#snapshot.ids, this.#now(), this.#timing, this.#settings, this.#coordinators.views());
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Snapshots sent so far, across leaders. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * Takes over from a stored state: the stored instances replace the file's, each member gets its
   * stored role and body in force; roles go out only where a status read after this shows the agent lacks them.
   * @example controller.lead({ desired, assignments, generation });
   */
  lead(state: StoredState): void {
    if (this.#closed) return;
    restoreMembers(this.#members, state);
    this.#moves.restore(this.#members);
    this.#generation = Math.max(this.#generation, state.generation);
    this.#takeoverMark = this.#mark();
    this.#replan();
    settleRestored(this.#members);
    this.#gate.begin(this.#takeoverMark, state.snapshot);
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

  /** What a leader keeps in the store (takeover.ts). */
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
    for (const m of this.#members.values()) m.drain?.done.resolve('closed');
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
      if (m.judge(now, this.#timing.heartbeatTimeoutMs, this.#log)) replan = true;
      if (this.#acts() && m.drain !== undefined && drainFinished(m, now, this.#timing)) {
        finishDrain(this.#members, m, this.#client, this.#log);
        replan = true;
      }
    }
    if (this.#moves.advance(this.#members, now, this.#timing, this.#acts())) replan = true;
    if (replan || this.#aliveChanged(now)) {
      this.#replan();
      this.#dirty = true;
    }
    if (this.#acts()) {
      this.#postRoles(now);
      if (this.#dirty) void this.#compose(now, false);
    }
    this.#events.evaluated?.(performance.now() - started);
  }

  #aliveKey = '';
  #marks = 0;

  #acts(): boolean {
    return this.#leading && this.#gate.mayAct();
  }

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
    planRoles(this.#members, this.#settings.rates, this.#now(), this.#timing.heartbeatTimeoutMs);
  }

  #postRoles(now: number): void {
    if (!this.#gate.mayPost(this.#members, now)) return;
    for (const m of postsDue(this.#members, now, this.#timing.heartbeatTimeoutMs, this.#takeoverMark)) void this.#post(m);
  }

  readonly #clock: CallClock = { now: () => this.#now(), mark: () => this.#mark() };

  async #post(m: Member): Promise<void> {
    const ok = await postWanted(this.#client, m, this.#clock, this.#timing.roleRetryMs);
    this.#events.rolePost?.(ok);
    this.#evaluateSoon();
  }

  async #poll(m: Member): Promise<void> {
    if (await pollMember(this.#client, m, this.#clock, this.#timing.heartbeatTimeoutMs)) this.#dirty = true;
    this.#evaluateSoon();
  }

  /** Composes the snapshot; pushes it when `always`, or when its shape changed or a drain waits for it. */
  #compose(now: number, always: boolean): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    this.#dirty = false;
    const candidates = this.#gate.candidates(
      snapshotCandidates(this.#members, now, this.#timing.heartbeatTimeoutMs, this.#addresses),
      this.#members,
      now,
    );
    if (candidates === undefined) return Promise.resolve((this.#dirty = true) && false); // held (start-gate.ts)
    this.#snapshot = composeSnapshot(candidates);
    const shape = JSON.stringify(this.#snapshot.instances.map((i) => [i.id, i.static_info, i.dynamic_info.peers]));
    // A drain waits for a snapshot without its instance to reach the Coordinators, even if the
    // instance was not in the last one.
    const draining = [...this.#members.values()].flatMap((m) => [m.drain, m.moveDrain]).filter((d) => d !== undefined && !d.pushed);
    if (shape === this.#shapeKey && draining.length === 0 && !always) return Promise.resolve(true);
    this.#shapeKey = shape;
    this.#generation += 1;
    this.#events.composed?.(this.#snapshot, this.#generation);
    for (const d of draining) d!.pushed = true;
    return this.#coordinators.pushAll().then((ok) => {
      // Coordinators that could not be told are not waited for: the drain timeout bounds them.
      const mark = this.#mark();
      for (const d of draining) d!.snapshotMark ??= mark;
      if (draining.length > 0) this.#evaluateSoon();
      return ok;
    });
  }
}
