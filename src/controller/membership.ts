/**
 * How the set of members changes at run time: one instance admitted through the API, or a changed
 * topology laid over the members as a diff. Apart from the loop so the rules for who may join and
 * what a changed spec resets read in one place; the loop replans and evaluates afterwards.
 */
import { errors } from '../core/errors.ts';
import { Member } from './member.ts';
import type { DesiredInstance, TopologySpec } from './types.ts';

/**
 * Adds a member for `spec`; a conflict (id or server_ip taken) throws and changes nothing.
 * @example admit(members, instance);
 */
export function admit(members: Map<number, Member>, spec: DesiredInstance): void {
  const existing = members.get(spec.id);
  if (existing !== undefined) throw errors.conflictWith(`instance ${spec.id} already exists${existing.drain ? ' (draining)' : ''}`, 'id');
  const sameIp = [...members.values()].find((m) => m.spec.serverIp === spec.serverIp);
  if (sameIp !== undefined) throw errors.conflictWith(`server_ip ${spec.serverIp} is already instance ${sameIp.id}'s`, 'server_ip');
  members.set(spec.id, new Member(spec, spec.role ?? 'prefill'));
}

/**
 * Lays a changed topology over `members`: ids gone from it are handed to `drain`, new ones added,
 * changed ones updated (a new role means the old one is lost).
 * @example applyInstances(members, previous, next, (id) => void controller.remove(id));
 */
export function applyInstances(
  members: Map<number, Member>,
  previous: TopologySpec,
  next: TopologySpec,
  drain: (id: number) => void,
): void {
  const before = new Map(previous.instances.map((i) => [i.id, i]));
  const after = new Map(next.instances.map((i) => [i.id, i]));
  for (const [id] of before) if (!after.has(id) && members.has(id)) drain(id);
  for (const [id, spec] of after) {
    const member = members.get(id);
    if (member === undefined) members.set(id, new Member(spec, spec.role ?? 'prefill'));
    else if (JSON.stringify(before.get(id)) !== JSON.stringify(spec)) {
      if (spec.role !== undefined && spec.role !== member.role) member.lostRole();
      member.spec = spec;
      if (spec.role !== undefined) member.role = spec.role;
    }
  }
}
