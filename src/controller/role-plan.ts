/**
 * The role body each member should hold: its role, group and desired peers, and the body the
 * agent's role API takes. Recomputed whenever membership or liveness changes; kept apart from the
 * loop because it only reads members and writes their plan, never calls out.
 */
import { assignRoles, groupCount, groupOf, peersOf } from './assign.ts';
import type { Member } from './member.ts';
import { placementOf } from './planner/move.ts';
import type { DesiredInstance, PdRates } from './types.ts';

/** A device as the agent's role API names it. */
export interface RoleDevice {
  readonly device_logical_id: string;
  readonly device_ip: string;
}

/**
 * The devices of an instance in the role API's wire names.
 * @example devicesOf(spec); // [{ device_logical_id: '0', device_ip: '10.0.0.1' }]
 */
export function devicesOf(spec: DesiredInstance): RoleDevice[] {
  return spec.devices.map((d) => ({ device_logical_id: d.logicalId, device_ip: d.ip }));
}

/** Each spec's part of a role body, built and serialised once: a plan at 4096 instances writes 4096 bodies. */
const sides = new WeakMap<DesiredInstance, { side: { server_ip: string; device: RoleDevice[] }; json: string }>();

function sideOf(spec: DesiredInstance): { side: { server_ip: string; device: RoleDevice[] }; json: string } {
  let cached = sides.get(spec);
  if (cached === undefined) {
    const side = { server_ip: spec.serverIp, device: devicesOf(spec) };
    sides.set(spec, (cached = { side, json: JSON.stringify(side) }));
  }
  return cached;
}

/**
 * Sets every member's role, group, desired peers and the role body it should hold.
 * @example planRoles(members, rates, now, timing.heartbeatTimeoutMs);
 */
export function planRoles(members: ReadonlyMap<number, Member>, rates: PdRates, now: number, heartbeatTimeoutMs: number): void {
  // Draining members keep their links (and so their place in peers' bodies) until drained.
  const active = [...members.values()];
  // A topology file that now fixes another role than a moved instance started from wins over the move.
  for (const m of active) if (m.move?.phase === 'done' && m.spec.role !== undefined && m.spec.role !== m.move.base) m.move = undefined;
  // A role once given is kept, so a scale-out never flips a serving instance's role. Groups are laid
  // out from the roles before any move, so a move changes its own group's peers and no other group.
  const roles = assignRoles(
    active.map((m) => ({ id: m.id, role: m.move?.base ?? m.spec.role ?? (m.wantedKey === '' ? undefined : m.role) })),
    rates,
  );
  const placements = groupOf(roles);
  const groups = groupCount(placements.size);
  for (const m of active) {
    const moved = placementOf(m.move);
    if (moved !== undefined)
      placements.set(m.id, { role: moved.role, group: moved.group < groups ? moved.group : placements.get(m.id)!.group });
  }
  const peers = peersOf(placements);
  for (const m of active) {
    const placement = placements.get(m.id)!;
    if (m.role !== placement.role) m.lostRole();
    m.role = placement.role;
    m.group = placement.group;
    m.peers = peers.get(m.id) ?? [];
    // Only peers that answer are posted: a dead P left in a D's desired set would keep D from RoleReady.
    const live = m.peers.map((id) => members.get(id)!).filter((p) => p.alive(now, heartbeatTimeoutMs));
    const local = sideOf(m.spec);
    const peerSides = live.map((p) => sideOf(p.spec));
    m.wantedBody = { local: local.side, peers: peerSides.map((p) => p.side) };
    // The same text as JSON.stringify of that body, from the parts serialised once.
    m.wantedKey = `${m.role} {"local":${local.json},"peers":[${peerSides.map((p) => p.json).join(',')}]}`;
  }
}

/**
 * The ids of the members alive now, as one string: the role bodies post only live peers, so the
 * plan is redone when this changes.
 * @example aliveKey(members, now, timing.heartbeatTimeoutMs); // '101,201'
 */
export function aliveKey(members: ReadonlyMap<number, Member>, now: number, heartbeatTimeoutMs: number): string {
  return [...members.values()]
    .filter((m) => m.alive(now, heartbeatTimeoutMs))
    .map((m) => m.id)
    .join(',');
}

/**
 * The members whose role body is due now: not in force, not in flight, past its retry time, the
 * agent answering and read since the takeover (`takeoverMark`: a role already in force after a
 * takeover is not posted again), and a decode member's prefill peers not being posted (P first: a P
 * must want a D before that D links to it, or it would drop the link as unwanted).
 * @example for (const m of postsDue(members, now, timing.heartbeatTimeoutMs, takeoverMark)) post(m);
 */
export function postsDue(members: ReadonlyMap<number, Member>, now: number, heartbeatTimeoutMs: number, takeoverMark: number): Member[] {
  const due = new Set<number>();
  const posting = (id: number): boolean => due.has(id) || members.get(id)?.postInFlight === true;
  for (const m of members.values()) {
    if (m.postInFlight || m.postedKey === m.wantedKey || now < m.nextPostAt) continue;
    if (m.observedMark <= takeoverMark || !m.alive(now, heartbeatTimeoutMs)) continue;
    if (m.role === 'decode' && m.peers.some(posting)) continue;
    due.add(m.id);
  }
  return [...due].map((id) => members.get(id)!);
}
