/**
 * How the controller carries out a move between roles, one at a time: the checks a move must pass
 * (the instance runs and is not leaving, no other move is under way, its group keeps its minimum of
 * the role it leaves), then the phases of its record (move.ts), advanced by the control loop: the
 * drain (the same rules as a removal's: out of the snapshot, a snapshot without it delivered, its
 * requests and KV blocks gone or the drain timeout), the switch (the loop's replan gives it the new
 * role and peers and posts them) and the end (RoleReady in the new role, so it joins the snapshot).
 * The planner proposes moves; an operator asks for them through the API; both come through here.
 */
import { errors } from '../../core/errors.ts';
import type { Role } from '../../schema/role.ts';
import { drainOver, newDrain } from '../drain.ts';
import type { Member } from '../member.ts';
import type { ControllerTiming } from '../types.ts';
import { inProgress, type MoveSource, type RoleMove } from './move.ts';

/** Moves kept in the history an operator sees. */
export const MOVE_HISTORY = 20;

/** How a move ended: done (RoleReady in the new role), timed out, or called off. */
export type MoveOutcome = 'done' | 'timed_out' | 'cancelled';

export interface MoveLimits {
  readonly minPrefillPerGroup: number;
  readonly minDecodePerGroup: number;
  readonly moveTimeoutMs: number;
}

export interface MoveRequest {
  readonly by: MoveSource;
  readonly reason: string;
  /** Keep the planner off the instance afterwards (default: true for an operator, false for the planner). */
  readonly pin?: boolean;
}

/** A move as an operator sees it. */
export interface MoveView extends RoleMove {
  readonly id: number;
  readonly outcome?: MoveOutcome;
}

/** What a move request did: started a move, only changed the pin, or nothing (the role is already held). */
export type MoveStart = { readonly outcome: 'started' | 'pinned' | 'unchanged'; readonly move: MoveView | undefined };

/** What an operator and the planner read of the moves. */
export interface MovesView {
  readonly current: MoveView | undefined;
  /** The last moves, newest first. */
  readonly history: readonly MoveView[];
  /** When the last move in a group ended. */
  lastEnded(group: number): number | undefined;
}

export interface MoveEvents {
  /** A move began, changed phase or ended (the leader stores the record each time). */
  changed?(move: MoveView): void;
  ended?(move: MoveView, outcome: MoveOutcome, seconds: number): void;
}

export class MoveRunner {
  #limits: MoveLimits;
  readonly #events: MoveEvents;
  readonly #log: (line: string) => void;
  #current: number | undefined;
  #seq = 0;
  readonly #history: MoveView[] = [];
  readonly #groupEnded = new Map<number, number>();

  /** @example const moves = new MoveRunner(limits, { changed: (m) => keeper.request() }, log); */
  constructor(limits: MoveLimits, events: MoveEvents = {}, log: (line: string) => void = () => {}) {
    this.#limits = limits;
    this.#events = events;
    this.#log = log;
  }

  set limits(limits: MoveLimits) {
    this.#limits = limits;
  }

  /** The id of the instance whose move is under way. */
  get current(): number | undefined {
    return this.#current;
  }

  /** The last moves, newest first. */
  history(): readonly MoveView[] {
    return this.#history;
  }

  /**
   * The move under way, the last moves, and when each group last ended one.
   * @example controller.moves.current?.phase // 'draining'
   */
  view(members: ReadonlyMap<number, Member>): MovesView {
    const id = this.#current;
    const move = id === undefined ? undefined : members.get(id)?.move;
    return {
      current: id === undefined || move === undefined ? undefined : viewOf(move, id),
      history: this.#history,
      lastEnded: (group) => this.#groupEnded.get(group),
    };
  }

  /** When the last move in `group` ended (the planner's cool-down counts from it). */
  lastEnded(group: number): number | undefined {
    return this.#groupEnded.get(group);
  }

  /**
   * After a takeover: the move under way, the numbering and each group's last move come from the
   * restored members' records.
   * @example restoreMembers(members, state); moves.restore(members);
   */
  restore(members: ReadonlyMap<number, Member>): void {
    this.#current = undefined;
    for (const m of members.values()) {
      const move = m.move;
      if (move === undefined) continue;
      this.#seq = Math.max(this.#seq, move.seq);
      if (inProgress(move)) this.#current = m.id;
      else if (move.ended !== undefined && move.ended > (this.#groupEnded.get(move.group) ?? -Infinity))
        this.#groupEnded.set(move.group, move.ended);
    }
  }

  /**
   * Starts moving instance `id` to role `to`; throws 404 (no such instance) or 409 (another move
   * runs, the instance is leaving or down, or its group would fall below its minimum).
   * @example moves.start(members, 101, 'decode', { by: 'operator', reason: 'asked' }, now, alive);
   */
  start(
    members: ReadonlyMap<number, Member>,
    id: number,
    to: Role,
    request: MoveRequest,
    now: number,
    alive: (m: Member) => boolean,
  ): MoveStart {
    const m = members.get(id);
    if (m === undefined) throw errors.notFound(`instance ${id}`);
    const current = this.#current === undefined ? undefined : members.get(this.#current);
    if (current !== undefined && inProgress(current.move) && current.id !== id) {
      const c = current.move!;
      throw errors.conflictWith(
        `a move is under way (instance ${current.id} ${c.from} → ${c.to}, ${c.phase}); one move at a time: try again when it is done`,
        'id',
      );
    }
    if (inProgress(m.move)) throw errors.conflictWith(`instance ${id} is already moving to ${m.move!.to} (${m.move!.phase})`, 'id');
    if (m.drain !== undefined) throw errors.conflictWith(`instance ${id} is being removed`, 'id');
    const pin = request.pin ?? request.by === 'operator';
    if (m.role === to) return this.#pin(m, pin, request, now);
    if (!alive(m)) throw errors.conflictWith(`instance ${id} is not answering: a move drains and switches a running instance`, 'id');
    const min = m.role === 'prefill' ? this.#limits.minPrefillPerGroup : this.#limits.minDecodePerGroup;
    const left = [...members.values()].filter(
      (o) => o !== m && o.group === m.group && o.role === m.role && o.drain === undefined && alive(o),
    );
    if (left.length < min) {
      throw errors.conflictWith(
        `instance ${id} is one of ${left.length + 1} running ${m.role} instances of group ${m.group}; moving it would leave ${left.length}, ` +
          `below the minimum of ${min} (planner.min_${m.role}_per_group)`,
        'role',
      );
    }
    m.move = {
      seq: ++this.#seq,
      from: m.role,
      to,
      base: m.move?.base ?? m.spec.role ?? m.role,
      group: m.group,
      phase: 'draining',
      by: request.by,
      reason: request.reason,
      since: now,
      pinned: pin,
    };
    m.moveDrain = newDrain(now);
    this.#current = id;
    this.#log(`instance ${id} moving ${m.role} → ${to} (${request.by}: ${request.reason}): draining`);
    this.#events.changed?.(viewOf(m.move, id));
    return { outcome: 'started', move: viewOf(m.move, id) };
  }

  /**
   * Advances the move under way; true when its instance's role changes (the loop plans again).
   * @example if (moves.advance(members, now, timing, acts)) replan = true;
   */
  advance(members: ReadonlyMap<number, Member>, now: number, timing: ControllerTiming, acts: boolean): boolean {
    if (this.#current === undefined) return false;
    const m = members.get(this.#current);
    const move = m?.move;
    if (m === undefined || move === undefined || !inProgress(move)) {
      this.#current = undefined;
      return false;
    }
    if (m.drain !== undefined) {
      m.move = undefined;
      m.moveDrain = undefined;
      this.#end(m.id, move, 'cancelled', now, 'the instance is being removed');
      return true;
    }
    if (move.phase === 'draining') {
      if (now - move.since >= this.#limits.moveTimeoutMs) {
        // Still in its old role: it keeps it, and goes back into the snapshot.
        m.move = move.from === move.base && !move.pinned ? undefined : { ...move, to: move.from, phase: 'done', ended: now };
        m.moveDrain = undefined;
        this.#end(m.id, move, 'timed_out', now, 'its drain did not end in time; it keeps its role');
        return true;
      }
      m.moveDrain ??= newDrain(move.since);
      if (!acts || !drainOver(m.moveDrain, m, now, timing)) return false;
      move.phase = 'switching';
      m.moveDrain = undefined;
      this.#log(`instance ${m.id} drained: switching ${move.from} → ${move.to}`);
      this.#events.changed?.(viewOf(move, m.id));
      return true;
    }
    if (m.joined && m.role === move.to) {
      move.phase = 'done';
      move.ended = now;
      this.#end(m.id, move, 'done', now, `ready as ${move.to}`);
    } else if (now - move.since >= this.#limits.moveTimeoutMs) {
      // Its new role stays assigned (its agent may be switching): it joins when it is ready.
      move.phase = 'done';
      move.ended = now;
      this.#end(m.id, move, 'timed_out', now, `not ready as ${move.to} in time; it keeps the new role`);
    }
    return false;
  }

  #pin(m: Member, pin: boolean, request: MoveRequest, now: number): MoveStart {
    const pinned = m.move?.pinned ?? false;
    if (pinned === pin) return { outcome: 'unchanged', move: m.move === undefined ? undefined : viewOf(m.move, m.id) };
    m.move =
      m.move === undefined
        ? {
            seq: ++this.#seq,
            from: m.role,
            to: m.role,
            base: m.spec.role ?? m.role,
            group: m.group,
            phase: 'done',
            by: request.by,
            reason: request.reason,
            since: now,
            ended: now,
            pinned: pin,
          }
        : { ...m.move, pinned: pin };
    this.#log(`instance ${m.id} ${pin ? 'pinned' : 'unpinned'} as ${m.role} (${request.by})`);
    this.#events.changed?.(viewOf(m.move, m.id));
    return { outcome: 'pinned', move: viewOf(m.move, m.id) };
  }

  #end(id: number, move: RoleMove, outcome: MoveOutcome, now: number, why: string): void {
    this.#current = undefined;
    this.#groupEnded.set(move.group, now);
    const view = { ...viewOf(move, id), phase: 'done' as const, ended: now, outcome };
    this.#history.unshift(view);
    this.#history.length = Math.min(this.#history.length, MOVE_HISTORY);
    this.#log(
      `instance ${id} move ${move.from} → ${move.to} ${outcome.replace('_', ' ')} after ${((now - move.since) / 1000).toFixed(1)} s: ${why}`,
    );
    this.#events.changed?.(view);
    this.#events.ended?.(view, outcome, (now - move.since) / 1000);
  }
}

function viewOf(move: RoleMove, id: number): MoveView {
  return { id, ...move };
}
