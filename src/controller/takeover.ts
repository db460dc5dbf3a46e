/**
 * The two halves of a leader handover as they touch members: what a leader keeps in the store,
 * and how a new leader lays the stored desired instances and assignments over its own members.
 * Apart from the loop because both are plain reads and writes of member facts; the loop decides
 * when a takeover happens and what follows it.
 *
 * A stored role body is only a hash of its key: once the new leader has planned its own bodies
 * (with its own view of which peers answer), `settleRestored` counts a member's body as in force
 * when its planned key hashes to the stored one, so that body is not posted again.
 */
import { startDrain } from './drain.ts';
import { Member } from './member.ts';
import { readMove } from './planner/move.ts';
import { POSTED_HASH_PREFIX, postedHash, type StoredState } from './stored-state.ts';

/** The wanted key a restored member holds until the replan: non-empty, so planRoles keeps its role. */
const RESTORED_KEY = 'restored';

/**
 * What a leader keeps in the store: the desired instances, the draining ones, and every member's
 * assignment (with a drain or a move under way).
 * @example store.write(storedStateOf(members, generation));
 */
export function storedStateOf(members: ReadonlyMap<number, Member>, generation: number): StoredState {
  const all = [...members.values()];
  return {
    desired: all.filter((m) => m.drain === undefined).map((m) => m.spec),
    draining: all.filter((m) => m.drain !== undefined).map((m) => m.spec),
    assignments: all.map((m) => ({
      id: m.id,
      role: m.role,
      group: m.group,
      postedKey: m.postedKey,
      joined: m.joined,
      drainRequestedAt: m.drain?.requestedAt,
      ...(m.move === undefined ? {} : { move: m.move }),
    })),
    generation,
  };
}

/**
 * Makes `members` the stored instances (when stored: desired and draining) and gives each its
 * stored role, group, role body in force (as a hash, see settleRestored), drain and move; a role
 * fixed in the spec wins over a stored one.
 * @example restoreMembers(members, state);
 */
export function restoreMembers(members: Map<number, Member>, state: StoredState): void {
  if (state.desired !== undefined) {
    const wanted = new Map([...state.desired, ...(state.draining ?? [])].map((d) => [d.id, d]));
    for (const id of [...members.keys()]) if (!wanted.has(id)) members.delete(id);
    for (const [id, spec] of wanted) {
      const member = members.get(id);
      if (member === undefined) members.set(id, new Member(spec, spec.role ?? 'prefill'));
      else member.spec = spec;
    }
  }
  for (const a of state.assignments) {
    const m = members.get(a.id);
    if (m === undefined) continue;
    if (a.drainRequestedAt !== undefined && m.drain === undefined) void startDrain(m, a.drainRequestedAt);
    if (a.move !== undefined) m.move = readMove(a.move);
    // A role fixed in the spec wins over a stored one, unless the instance was moved from it.
    if (m.spec.role !== undefined && m.spec.role !== a.role && m.move === undefined) continue;
    m.role = a.role;
    m.group = a.group;
    m.postedKey = a.postedKey;
    // A non-empty wanted key keeps the role through the replan (see planRoles).
    m.wantedKey = a.postedKey ?? RESTORED_KEY;
    m.joined = a.joined && a.postedKey !== undefined;
  }
}

/**
 * After the replan that follows restoreMembers: a stored body hash becomes the planned key when
 * they match (the body is in force, nothing to post), else no body counts as in force; a member
 * whose body in force is not the planned one is not joined.
 * @example restoreMembers(members, state); replan(); settleRestored(members);
 */
export function settleRestored(members: ReadonlyMap<number, Member>): void {
  for (const m of members.values()) {
    const posted = m.postedKey;
    if (posted !== undefined && posted.startsWith(POSTED_HASH_PREFIX)) {
      m.postedKey = postedHash(m.wantedKey) === posted.slice(POSTED_HASH_PREFIX.length) ? m.wantedKey : undefined;
    }
    // A member whose body in force is not the one planned has not joined with it.
    if (m.postedKey !== m.wantedKey) m.joined = false;
  }
}
