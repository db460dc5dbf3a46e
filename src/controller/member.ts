/**
 * What the controller knows of one instance: its desired spec and placement, the last role body
 * the agent accepted, the last status it answered, whether it has been ready in its role, and a
 * planned removal in progress. The loop (controller.ts) drives it; this file only keeps the facts
 * and the rules that read them.
 */
import type { Role } from '../schema/role.ts';
import type { AgentObservation } from './agent-status.ts';
import type { RoleMove } from './planner/move.ts';
import type { DesiredInstance } from './types.ts';

export type MemberState = 'unreachable' | 'down' | 'moving' | 'posting' | 'linking' | 'faulty' | 'waiting' | 'serving' | 'draining';

/** How a drain ended: the instance left, the topology took it back, or the controller closed first. */
export type DrainOutcome = 'removed' | 'cancelled' | 'closed';

export interface Drain {
  readonly requestedAt: number;
  /** A snapshot without the instance has been sent (or is on its way). */
  pushed: boolean;
  /** Event mark of when a snapshot without the instance reached the Coordinators. */
  snapshotMark: number | undefined;
  readonly done: PromiseWithResolvers<DrainOutcome>;
}

export class Member {
  spec: DesiredInstance;
  /** The role it was given (fixed in the spec, or assigned once and kept). */
  role: Role;
  group = 0;
  /** Desired peers (ids) by group, whatever their health. */
  peers: number[] = [];
  /** Key of the role body it should have; `postedKey` when it has it. */
  wantedKey = '';
  wantedBody: unknown;
  postedKey: string | undefined;
  postInFlight = false;
  /**
   * Event marks (a counter, not a clock: two events in one millisecond stay ordered): when the
   * last post answered, and when the poll behind `observation` began. An observation from a poll
   * begun before the post answered may show the state before it.
   */
  postDoneMark = 0;
  nextPostAt = 0;
  lastSeenAt: number | undefined;
  polling = false;
  observation: AgentObservation | undefined;
  observedMark = 0;
  /** Has been RoleReady in its role since it last got it. */
  joined = false;
  drain: Drain | undefined;
  /**
   * The record of a move between roles (planner/move.ts): the one under way, or the role it was moved
   * to; the store keeps it with the member, so a controller that takes over mid-move knows the move.
   */
  move: RoleMove | undefined;
  /** The drain of a move under way (in memory: a new leader starts its own, timed from the move's start). */
  moveDrain: Drain | undefined;
  lastError: { message: string; at: number } | undefined;

  constructor(spec: DesiredInstance, role: Role) {
    this.spec = spec;
    this.role = role;
  }

  get id(): number {
    return this.spec.id;
  }

  /** Answered a status poll within the heartbeat timeout. */
  alive(now: number, heartbeatTimeoutMs: number): boolean {
    return this.lastSeenAt !== undefined && now - this.lastSeenAt <= heartbeatTimeoutMs;
  }

  /** Forgets what the agent held: it died or restarted, so it needs its role again. */
  lostRole(): void {
    this.postedKey = undefined;
    this.joined = false;
    this.nextPostAt = 0;
  }

  /**
   * The observation, if it was taken after the last post answered (an older one may show the
   * state before the post).
   */
  freshObservation(): AgentObservation | undefined {
    return this.observedMark > this.postDoneMark ? this.observation : undefined;
  }

  /** Whether the agent shows no role, or another one, with nothing pending: it restarted. */
  forgotRole(): boolean {
    const o = this.freshObservation();
    if (o === undefined || this.postedKey === undefined || this.postInFlight) return false;
    return o.currentRole !== this.role && o.pendingRole !== this.role && o.queuedPosts === 0;
  }

  /** Whether it is RoleReady in its role with the body it should have. */
  readyInRole(): boolean {
    const o = this.freshObservation();
    return o !== undefined && this.postedKey === this.wantedKey && o.roleStatus === 'RoleReady' && o.currentRole === this.role;
  }

  /** Whether a poll begun after the `since` mark reports no request running and no KV block held. */
  idle(since: number): boolean {
    const r = this.observation?.resources;
    return this.observedMark > since && r !== undefined && r.availSlots >= r.totalSlots && r.availBlocks >= r.totalBlocks;
  }

  error(message: string, at: number): void {
    this.lastError = { message, at };
  }

  /**
   * Reads the facts anew: silent past the heartbeat timeout (down), showing no role or another one
   * (restarted), or ready in its role (joined); true when whether it has joined changed.
   * @example if (member.judge(now, timing.heartbeatTimeoutMs, log)) replan = true;
   */
  judge(now: number, heartbeatTimeoutMs: number, log: (line: string) => void): boolean {
    const wasJoined = this.joined;
    if (this.lastSeenAt !== undefined && !this.alive(now, heartbeatTimeoutMs) && (this.postedKey !== undefined || this.joined)) {
      this.lostRole();
      this.error(`no status answer for ${now - this.lastSeenAt} ms (heartbeat timeout ${heartbeatTimeoutMs} ms)`, now);
      log(`instance ${this.id} down`);
    }
    if (this.forgotRole()) {
      log(`instance ${this.id} lost its role (restarted?)`);
      this.lostRole();
    }
    if (!this.joined && this.readyInRole()) {
      this.joined = true;
      log(`instance ${this.id} ready as ${this.role}`);
    }
    return wasJoined !== this.joined;
  }
}
