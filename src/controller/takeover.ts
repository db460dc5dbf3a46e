/**
 * The two halves of a leader handover as they touch members: what a leader writes to the store,
 * and how a new leader lays the stored desired instances and assignments over its own members.
 * Apart from the loop because both are plain reads and writes of member facts; the loop decides
 * when a takeover happens and what follows it.
 */
import { Member } from './member.ts';
import type { StoredState } from './stored-state.ts';

/**
 * What a leader keeps in the store: the desired instances and every member's assignment.
 * @example store.write(storedStateOf(members, generation));
 */
export function storedStateOf(members: ReadonlyMap<number, Member>, generation: number): StoredState {
  const all = [...members.values()];
  return {
    desired: all.filter((m) => m.drain === undefined).map((m) => m.spec),
    assignments: all.map((m) => ({ id: m.id, role: m.role, group: m.group, postedKey: m.postedKey, joined: m.joined })),
    generation,
  };
}

/**
 * Makes `members` the stored desired instances (when stored) and gives each its stored role,
 * group and role body in force; a role fixed in the spec wins over a stored one.
 * @example restoreMembers(members, state);
 */
export function restoreMembers(members: Map<number, Member>, state: StoredState): void {
  if (state.desired !== undefined) {
    const wanted = new Map(state.desired.map((d) => [d.id, d]));
    for (const id of [...members.keys()]) if (!wanted.has(id)) members.delete(id);
    for (const [id, spec] of wanted) if (!members.has(id)) members.set(id, new Member(spec, spec.role ?? 'prefill'));
  }
  for (const a of state.assignments) {
    const m = members.get(a.id);
    if (m === undefined || (m.spec.role !== undefined && m.spec.role !== a.role)) continue;
    m.role = a.role;
    m.group = a.group;
    m.postedKey = a.postedKey;
    // A non-empty wanted key keeps the role through the replan (see planRoles).
    m.wantedKey = a.postedKey ?? `${a.role} stored`;
    m.joined = a.joined && a.postedKey !== undefined;
  }
}
