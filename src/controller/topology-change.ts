/**
 * A changed topology judged before it touches the cluster: what it would do (add, drain, update,
 * and bring back instances that were draining, so the cluster ends in the file's state), whether
 * its instances clash with those already running (the API's, or ones still draining), and whether
 * it removes too much at once: one edit that empties or guts a file would drain the whole cluster
 * in a tenth of a second, so a change removing more than a set fraction is refused unless forced.
 * Pure: the loop applies what this accepts and reports what it refused.
 */
import { errors, type FieldIssue } from '../core/errors.ts';
import { conflicts, type NamedInstance } from './conflicts.ts';
import { cancelDrain } from './drain.ts';
import type { Member } from './member.ts';
import { applyInstances } from './membership.ts';
import { DEFAULT_MAX_REMOVED_FRACTION, type TopologySpec } from './types.ts';

/** What a change does, by instance id. */
export interface TopologyChange {
  readonly added: readonly number[];
  /** Left out of the new topology: they drain, then leave. */
  readonly removed: readonly number[];
  readonly updated: readonly number[];
  /** Back in the new topology while they drained: the drain stops and they stay. */
  readonly drainsCancelled: readonly number[];
}

export type ApplyOutcome =
  | { readonly applied: true; readonly change: TopologyChange }
  | { readonly applied: false; readonly change: TopologyChange; readonly reason: string; readonly issues: readonly FieldIssue[] };

/**
 * What laying `next` over `members` (which `previous` described) would do.
 * @example planChange(members, fileBefore, fileAfter).removed // [201, 202]
 */
export function planChange(members: ReadonlyMap<number, Member>, previous: TopologySpec, next: TopologySpec): TopologyChange {
  const before = new Map(previous.instances.map((i) => [i.id, i]));
  const after = new Set(next.instances.map((i) => i.id));
  const added: number[] = [];
  const updated: number[] = [];
  const drainsCancelled: number[] = [];
  for (const spec of next.instances) {
    const member = members.get(spec.id);
    if (member === undefined) added.push(spec.id);
    else if (member.drain !== undefined && !before.has(spec.id)) drainsCancelled.push(spec.id);
    else if (JSON.stringify(before.get(spec.id)) !== JSON.stringify(spec)) updated.push(spec.id);
  }
  const removed = [...before.keys()].filter((id) => !after.has(id) && members.get(id)?.drain === undefined && members.has(id));
  return { added, removed, updated, drainsCancelled };
}

/**
 * Why the cluster cannot take `next` as `change` describes it (undefined: it can): its instances
 * clash with running ones it does not list, or it removes more than `maxRemovedFraction` of the
 * instances not already draining (unless `force`).
 * @example const refusal = refusal(members, next, change, { force: false });
 */
export function refusal(
  members: ReadonlyMap<number, Member>,
  next: TopologySpec,
  change: TopologyChange,
  force: boolean,
): { reason: string; issues: FieldIssue[] } | undefined {
  const listed = new Set(next.instances.map((i) => i.id));
  const others: NamedInstance[] = [...members.values()]
    .filter((m) => !listed.has(m.id))
    .map((m) => ({ spec: m.spec, path: '', name: `instance ${m.id}${m.drain === undefined ? '' : ' (draining)'}` }));
  const found = conflicts(
    others,
    next.instances.map((spec, i) => ({ spec, path: `instances[${i}]`, name: `instances[${i}]` })),
  );
  if (found.length > 0) {
    const issues = found.map(({ path, message }) => ({ path, message }));
    return { reason: `its instances clash with the running ones: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues };
  }
  const present = [...members.values()].filter((m) => m.drain === undefined).length;
  const guard = removalGuard(change.removed.length, present, next.maxRemovedFraction ?? DEFAULT_MAX_REMOVED_FRACTION, force);
  if (guard !== undefined) {
    const ids = change.removed.join(', ');
    return {
      reason: `${guard} (instances ${ids}); raise max_removed_fraction in the file, or apply it once with POST /v1/cluster/reload?force=true`,
      issues: [{ path: 'instances', message: guard }],
    };
  }
  return undefined;
}

/**
 * Why removing `removing` of `present` instances at once is refused (undefined: it is not).
 * @example removalGuard(4, 4, 0.5, false) // 'it removes 4 of 4 instances (100%), more than max_removed_fraction 0.5 allows'
 */
export function removalGuard(removing: number, present: number, maxFraction: number, force: boolean): string | undefined {
  if (force || removing === 0 || removing <= present * maxFraction) return undefined;
  const share = Math.round((removing / Math.max(present, 1)) * 100);
  return `it removes ${removing} of ${present} instance${present === 1 ? '' : 's'} (${share}%), more than max_removed_fraction ${maxFraction} allows`;
}

/**
 * Lays `next` over `members` (which `previous` described), or refuses it whole and changes nothing:
 * drains called off for the instances it lists again, `drain` called for those it leaves out.
 * @example const outcome = applyChange(members, fileBefore, fileAfter, false, (m) => startDrain(m, now));
 */
export function applyChange(
  members: Map<number, Member>,
  previous: TopologySpec,
  next: TopologySpec,
  force: boolean,
  drain: (m: Member) => void,
): ApplyOutcome {
  const change = planChange(members, previous, next);
  const refused = refusal(members, next, change, force);
  if (refused !== undefined) return { applied: false, change, ...refused };
  for (const id of change.drainsCancelled) cancelDrain(members.get(id)!);
  applyInstances(members, previous, next, (id) => drain(members.get(id)!));
  return { applied: true, change };
}

/**
 * The member `id` names, which may be removed alone: 404 when there is none, 409 when removing it
 * takes too large a share of `members` not already draining (one already draining is never refused).
 * @example const member = removable(members, 201, 0.5, false);
 */
export function removable(members: ReadonlyMap<number, Member>, id: number, maxFraction: number, force: boolean): Member {
  const member = members.get(id);
  if (member === undefined) throw errors.notFound(`instance ${id}`);
  if (member.drain !== undefined) return member;
  const present = [...members.values()].filter((m) => m.drain === undefined).length;
  const guard = removalGuard(1, present, maxFraction, force);
  if (guard !== undefined) throw errors.conflictWith(`instance ${id} not removed: ${guard}; send force=true to remove it anyway`, 'force');
  return member;
}

/**
 * One line for the log: what a change did.
 * @example describeChange(change) // 'added 203; draining 201, 202; drain cancelled for 200'
 */
export function describeChange(change: TopologyChange): string {
  const parts: string[] = [];
  const list = (ids: readonly number[]) => ids.join(', ');
  if (change.added.length > 0) parts.push(`added ${list(change.added)}`);
  if (change.removed.length > 0) parts.push(`draining ${list(change.removed)}`);
  if (change.updated.length > 0) parts.push(`updated ${list(change.updated)}`);
  if (change.drainsCancelled.length > 0) parts.push(`back in the topology while draining, so kept: ${list(change.drainsCancelled)}`);
  return parts.length === 0 ? 'no instance changed' : parts.join('; ');
}
