/**
 * The record of an instance moved between roles, kept on its member and in the store with it, so a
 * controller that takes over knows the move under way and the role the instance was moved to. A move
 * goes `draining` (out of the snapshot, its requests finishing, in its old role) → `switching` (its
 * new role and peers posted, until RoleReady in that role) → `done` (back in the snapshot). A done
 * record stays: the instance holds the role it was moved to, in the group it had (`base` is the role
 * it had before any move, from which the groups are laid out), and `pinned` keeps the planner off it.
 * Keys are single words, so the record reads the same in the store's wire format and in code.
 */
import type { Role } from '../../schema/role.ts';

export type MovePhase = 'draining' | 'switching' | 'done';

/** Who asked for a move: the planner, or an operator through the API. */
export type MoveSource = 'planner' | 'operator';

export interface RoleMove {
  /** Moves are numbered across leaders (a new leader continues from the highest stored). */
  readonly seq: number;
  readonly from: Role;
  readonly to: Role;
  /** The role before any move: groups are laid out from it, so a move keeps every group as it was. */
  readonly base: Role;
  readonly group: number;
  phase: MovePhase;
  readonly by: MoveSource;
  readonly reason: string;
  /** Epoch ms the move began (its drain timeout counts from here, across leaders). */
  readonly since: number;
  /** Epoch ms it ended, once done. */
  ended?: number;
  /** The planner leaves the instance alone (an operator's move pins it unless told otherwise). */
  pinned: boolean;
}

const ROLES = new Set(['prefill', 'decode']);
const PHASES = new Set(['draining', 'switching', 'done']);
const SOURCES = new Set(['planner', 'operator']);

/**
 * A stored record read back; undefined when it is not one (the new leader then decides afresh).
 * @example member.move = readMove(assignment.move);
 */
export function readMove(stored: unknown): RoleMove | undefined {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return undefined;
  const r = stored as Record<string, unknown>;
  const int = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
  if (!int(r['seq']) || !int(r['group']) || !int(r['since'])) return undefined;
  if (![r['from'], r['to'], r['base']].every((x) => ROLES.has(x as string))) return undefined;
  if (!PHASES.has(r['phase'] as string) || !SOURCES.has(r['by'] as string)) return undefined;
  if (typeof r['reason'] !== 'string' || typeof r['pinned'] !== 'boolean') return undefined;
  if (r['ended'] !== undefined && !int(r['ended'])) return undefined;
  return {
    seq: r['seq'],
    from: r['from'] as Role,
    to: r['to'] as Role,
    base: r['base'] as Role,
    group: r['group'],
    phase: r['phase'] as MovePhase,
    by: r['by'] as MoveSource,
    reason: r['reason'],
    since: r['since'],
    ...(r['ended'] === undefined ? {} : { ended: r['ended'] as number }),
    pinned: r['pinned'],
  };
}

/**
 * Whether the move is under way (not yet done).
 * @example if (inProgress(member.move)) refuse();
 */
export function inProgress(move: RoleMove | undefined): boolean {
  return move !== undefined && move.phase !== 'done';
}

/**
 * The role and group a record gives its instance: the old role while it drains, the new one after.
 * @example placementOf(member.move) // { role: 'decode', group: 0, base: 'prefill' }
 */
export function placementOf(move: RoleMove | undefined): { role: Role; group: number; base: Role } | undefined {
  if (move === undefined) return undefined;
  return { role: move.phase === 'draining' ? move.from : move.to, group: move.group, base: move.base };
}
