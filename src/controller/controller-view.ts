/**
 * How the Controller shows each member to an operator (`GET /v1/cluster`, the dashboard): the
 * state a member is in, the peers it has linked and the links that failed, read from the facts the
 * loop keeps. Pure functions over the members, so the loop only decides and this file only reports.
 */
import type { AgentResources } from './agent-status.ts';
import type { CoordinatorView } from './coordinators.ts';
import type { Member, MemberState } from './member.ts';
import { inProgress, type RoleMove } from './planner/move.ts';
import {
  DEFAULT_MAX_REMOVED_FRACTION,
  type ControllerTiming,
  type DesiredInstance,
  type PdRates,
  type TimingDefaults,
  type TopologySpec,
} from './types.ts';

export interface MemberView {
  readonly id: number;
  readonly role: string;
  readonly group: number;
  readonly state: MemberState;
  readonly reachable: boolean;
  readonly lastSeenAt: number | undefined;
  readonly roleStatus: string | undefined;
  readonly desiredPeers: readonly number[];
  readonly linkedPeers: readonly number[];
  readonly inSnapshot: boolean;
  readonly lastError: { readonly message: string; readonly at: number } | undefined;
  readonly inferenceUrl: string;
  /** What the agent last reported free and in total, when it reports it. */
  readonly resources: AgentResources | undefined;
  /** Desired peer id → code of its failed link, as the agent last reported. */
  readonly failedLinks: ReadonlyMap<number, string>;
  /** Its move between roles: the one under way, or the role it was moved to (and whether it is pinned). */
  readonly move: RoleMove | undefined;
  /** The topology file fixes its role (the planner leaves it alone). */
  readonly roleFixed: boolean;
}

/** The spec's settings an operator sees besides the timing. */
export interface ClusterSettings {
  /** Where the timings the topology file leaves out come from (undefined: not from a file). */
  readonly timingDefaults: TimingDefaults | undefined;
  readonly rates: PdRates;
  /** Largest share of the instances one change may remove unless forced. */
  readonly maxRemovedFraction: number;
}

/**
 * The settings of `spec`, defaults filled in.
 * @example settingsOf(spec).maxRemovedFraction // 0.5
 */
export function settingsOf(spec: TopologySpec): ClusterSettings {
  return {
    timingDefaults: spec.timingDefaults,
    rates: spec.rates,
    maxRemovedFraction: spec.maxRemovedFraction ?? DEFAULT_MAX_REMOVED_FRACTION,
  };
}

/** What the Controller shows of itself (`GET /v1/cluster`): the desired state, the observed one, each member. */
export interface ControllerView extends ClusterSettings {
  readonly coordinators: readonly CoordinatorView[];
  readonly timing: ControllerTiming;
  readonly desired: readonly DesiredInstance[];
  readonly snapshotIds: readonly number[];
  readonly members: readonly MemberView[];
}

/**
 * The desired peers of `m` its agent last reported linked.
 * @example linkedPeers(member, members); // [101, 102]
 */
export function linkedPeers(m: Member, members: ReadonlyMap<number, Member>): number[] {
  const o = m.observation;
  if (o === undefined) return [];
  return m.peers.filter((id) => {
    const peer = members.get(id);
    return peer !== undefined && o.linkedPeers.has(peer.spec.serverIp);
  });
}

/**
 * Desired peer id → code of its failed link, as the agent of `m` last reported.
 * @example failedLinks(member, members).get(101); // 'LINK_TIMEOUT'
 */
export function failedLinks(m: Member, members: ReadonlyMap<number, Member>): Map<number, string> {
  const failed = new Map<number, string>();
  const o = m.observation;
  if (o === undefined) return failed;
  for (const id of m.peers) {
    const code = o.linkFailures.get(members.get(id)?.spec.serverIp ?? '');
    if (code !== undefined) failed.set(id, code);
  }
  return failed;
}

/**
 * Where `m` stands on its way to serving, as an operator reads it.
 * @example stateOf(member, members, now, timing, new Set(snapshot.ids)); // 'serving'
 */
export function stateOf(
  m: Member,
  members: ReadonlyMap<number, Member>,
  now: number,
  timing: ControllerTiming,
  inSnapshot: ReadonlySet<number>,
): MemberState {
  if (m.drain !== undefined) return 'draining';
  if (!m.alive(now, timing.heartbeatTimeoutMs)) return m.lastSeenAt === undefined ? 'unreachable' : 'down';
  if (inProgress(m.move)) return 'moving';
  if (m.postedKey !== m.wantedKey) return 'posting';
  if (!m.joined) return 'linking';
  if (inSnapshot.has(m.id)) return 'serving';
  const livePeers = m.peers.filter((id) => members.get(id)?.alive(now, timing.heartbeatTimeoutMs) === true);
  // MindIE counts a D linked to none of its P as faulty.
  if (m.role === 'decode' && livePeers.length > 0 && linkedPeers(m, members).length === 0) return 'faulty';
  return 'waiting';
}

/**
 * Every member as an operator sees it, by id.
 * @example memberViews(members, snapshot.ids, now, timing);
 */
export function memberViews(
  members: ReadonlyMap<number, Member>,
  snapshotIds: readonly number[],
  now: number,
  timing: ControllerTiming,
): MemberView[] {
  const inSnapshot = new Set(snapshotIds);
  return [...members.values()]
    .sort((a, b) => a.id - b.id)
    .map((m): MemberView => ({
      id: m.id,
      role: m.role,
      group: m.group,
      state: stateOf(m, members, now, timing, inSnapshot),
      reachable: m.alive(now, timing.heartbeatTimeoutMs),
      lastSeenAt: m.lastSeenAt,
      roleStatus: m.observation?.roleStatus,
      desiredPeers: m.peers,
      linkedPeers: linkedPeers(m, members),
      inSnapshot: inSnapshot.has(m.id),
      lastError: m.lastError,
      inferenceUrl: m.spec.inferenceUrl,
      resources: m.observation?.resources,
      failedLinks: failedLinks(m, members),
      move: m.move,
      roleFixed: m.spec.role !== undefined,
    }));
}

/**
 * The whole view of a Controller from its parts.
 * @example controllerView(members, snapshot.ids, now, timing, settings, coordinators.views());
 */
export function controllerView(
  members: ReadonlyMap<number, Member>,
  snapshotIds: readonly number[],
  now: number,
  timing: ControllerTiming,
  settings: ClusterSettings,
  coordinators: readonly CoordinatorView[],
): ControllerView {
  return {
    ...settings,
    coordinators,
    timing,
    desired: [...members.values()].filter((m) => m.drain === undefined).map((m) => m.spec),
    snapshotIds,
    members: memberViews(members, snapshotIds, now, timing),
  };
}
