/**
 * The registry's operator view, the body of `GET /v1/instances`: built from what the registry holds
 * when first asked after an apply (the registry caches it until the next one).
 */
import type { HeldInstance } from './held-instance.ts';
import type { InstanceRole } from './instance.ts';

export interface RoleCounts {
  prefill: number;
  decode: number;
  undefined: number;
}

/**
 * The body of `GET /v1/instances`, for operators:
 * - `generation`: accepted refreshes so far; `refreshed_at`: ISO time of the last one (null before any);
 * - `counts`: registered instances per role;
 * - `instances`: the instance objects exactly as last accepted, unknown fields included, in snapshot order;
 * - `groups`: per `static_info.group_id` (ascending), the ids of each role (ascending);
 * - `peers`: per instance, its role name and the peer ids it reported (P ids for D, D ids for P).
 */
export interface InstancesView {
  generation: number;
  refreshed_at: string | null;
  counts: RoleCounts;
  instances: readonly Readonly<Record<string, unknown>>[];
  groups: { group_id: number; prefill: number[]; decode: number[]; undefined: number[] }[];
  peers: { id: number; role: InstanceRole; peers: number[] }[];
}

/**
 * The view of the instances `all` (in snapshot order) after `generation` accepted refreshes, the
 * last at `lastRefreshAt` (ms since the epoch; undefined before any).
 * @example instancesView(registry.all(), registry.generation, registry.lastRefreshAt, registry.counts())
 */
export function instancesView(
  all: readonly HeldInstance[],
  generation: number,
  lastRefreshAt: number | undefined,
  counts: RoleCounts,
): InstancesView {
  const groups = new Map<number, Record<InstanceRole, number[]>>();
  for (const instance of all) {
    let group = groups.get(instance.groupId);
    if (group === undefined) groups.set(instance.groupId, (group = { prefill: [], decode: [], undefined: [] }));
    group[instance.role].push(instance.id);
  }
  const ascending = (a: number, b: number) => a - b;
  return {
    generation,
    refreshed_at: lastRefreshAt === undefined ? null : new Date(lastRefreshAt).toISOString(),
    counts,
    instances: all.map((i) => i.wire),
    groups: [...groups]
      .sort(([a], [b]) => a - b)
      .map(([groupId, g]) => ({
        group_id: groupId,
        prefill: g.prefill.sort(ascending),
        decode: g.decode.sort(ascending),
        undefined: g.undefined.sort(ascending),
      })),
    peers: all.map((i) => ({ id: i.id, role: i.role, peers: [...i.peers] })),
  };
}
