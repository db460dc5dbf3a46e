/**
 * Role assignment and grouping, as MindIE's Controller forms them: instances without a role take
 * one by the P:D rates; then G = ceil(N / 16) groups, P_i in group i mod G and D_i in group
 * (i + pNum) mod G (i counted per role, by id), and within a group every P is peered with every D.
 * Pure functions over the desired topology, so faults never reshuffle groups.
 */
import type { Role } from '../schema/role.ts';
import type { PdRates } from './types.ts';

/** Most instances in one group (MindIE's). */
export const GROUP_SIZE = 16;

export interface Placement {
  readonly role: Role;
  readonly group: number;
}

/**
 * Roles for every instance: fixed ones kept, open ones (in id order) each given the role that keeps
 * the count of P closest to the rates' share without exceeding it.
 * @example assignRoles([{ id: 1 }, { id: 2 }], { p: 0, d: 0 }) // Map { 1 => 'prefill', 2 => 'decode' }
 */
export function assignRoles(instances: readonly { id: number; role?: Role | undefined }[], rates: PdRates): Map<number, Role> {
  const roles = new Map<number, Role>();
  let p = 0;
  let d = 0;
  for (const i of instances) {
    if (i.role === 'prefill') p++;
    if (i.role === 'decode') d++;
  }
  const [rp, rd] = rates.p === 0 && rates.d === 0 ? [1, 1] : [rates.p, rates.d];
  for (const i of [...instances].sort((a, b) => a.id - b.id)) {
    if (i.role !== undefined) {
      roles.set(i.id, i.role);
      continue;
    }
    // Prefill while P is below its share of the cluster including this instance.
    const prefill = p * (rp + rd) < rp * (p + d + 1);
    roles.set(i.id, prefill ? 'prefill' : 'decode');
    if (prefill) p++;
    else d++;
  }
  return roles;
}

/**
 * How many groups `instances` instances form: ceil(N / 16), at least one.
 * @example groupCount(40) // 3
 */
export function groupCount(instances: number): number {
  return Math.max(1, Math.ceil(instances / GROUP_SIZE));
}

/**
 * Group of every instance by MindIE's rule.
 * @example groupOf(new Map([[1, 'prefill'], [2, 'decode']])) // Map { 1 => { role: 'prefill', group: 0 }, 2 => ... }
 */
export function groupOf(roles: ReadonlyMap<number, Role>): Map<number, Placement> {
  const ids = (role: Role) =>
    [...roles]
      .filter(([, r]) => r === role)
      .map(([id]) => id)
      .sort((a, b) => a - b);
  const ps = ids('prefill');
  const ds = ids('decode');
  const groups = groupCount(ps.length + ds.length);
  const out = new Map<number, Placement>();
  ps.forEach((id, i) => out.set(id, { role: 'prefill', group: i % groups }));
  ds.forEach((id, i) => out.set(id, { role: 'decode', group: (i + ps.length) % groups }));
  return out;
}

/**
 * Desired peers of each instance: the instances of the other role in its group, by id.
 * @example peersOf(groupOf(roles)).get(2) // [1]
 */
export function peersOf(placements: ReadonlyMap<number, Placement>): Map<number, number[]> {
  // Members by group and role first: comparing every pair was 16 million steps at 4096 instances.
  const byGroup = new Map<number, { prefill: number[]; decode: number[] }>();
  for (const [id, p] of placements) {
    let group = byGroup.get(p.group);
    if (group === undefined) byGroup.set(p.group, (group = { prefill: [], decode: [] }));
    group[p.role].push(id);
  }
  for (const group of byGroup.values()) {
    group.prefill.sort((a, b) => a - b);
    group.decode.sort((a, b) => a - b);
  }
  const out = new Map<number, number[]>();
  for (const [id, p] of placements) {
    const group = byGroup.get(p.group)!;
    out.set(id, [...(p.role === 'prefill' ? group.decode : group.prefill)]);
  }
  return out;
}
