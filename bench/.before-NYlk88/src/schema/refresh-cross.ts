/**
 * The refresh rules that span instances: `ids` ↔ `instances[].id`, duplicates, and peers (existence,
 * role, duplicates). They run inside the Valibot schema (a `v.rawCheck`) on partially valid input
 * too, so their issues come together with the structural ones.
 */
import { isUint64, MAX_INSTANCES, ROLE_CODES, ROLE_DECODE, ROLE_PREFILL, type RoleCode } from './refresh-limits.ts';

export type IssueKey = string | number;

/** Receives one issue: its path, and its message built only if the issue is kept. */
export type ReportIssue = (at: IssueKey[], message: () => string) => void;

const ROLE_NAME: Record<number, string> = { 80: 'prefill', 68: 'decode', 85: 'undefined' };

type Loose = { [key: string]: unknown } | null | undefined;

/** An array the structural rules accept the length of, or undefined (it has its own issue). */
function listOf(x: unknown): readonly unknown[] | undefined {
  return Array.isArray(x) && x.length <= MAX_INSTANCES ? x : undefined;
}

/**
 * Reports every cross-instance problem of a (possibly partially valid) snapshot. Values that
 * already have their own issue are skipped, and a reference is reported missing only when every
 * id it could refer to is readable, so one broken id does not cascade into follow-up issues.
 * @example crossInstanceIssues(body, (at, message) => issues.push({ at, message: message() }));
 */
export function crossInstanceIssues(root: unknown, report: ReportIssue): void {
  if (root === null || typeof root !== 'object') return;
  const idList = listOf((root as Loose)?.ids);
  const instanceList = listOf((root as Loose)?.instances);

  const listed = new Map<number, number>();
  let idsReadable = idList !== undefined;
  idList?.forEach((id, index) => {
    if (!isUint64(id)) return void (idsReadable = false);
    const first = listed.get(id);
    if (first === undefined) listed.set(id, index);
    else report(['ids', index], () => `duplicate id ${id} (first at ids[${first}])`);
  });

  const byId = new Map<number, { index: number; role: unknown }>();
  let instancesReadable = instanceList !== undefined;
  instanceList?.forEach((item, index) => {
    const id = (item as Loose)?.id;
    if (!isUint64(id)) return void (instancesReadable = false);
    const first = byId.get(id);
    if (first !== undefined) {
      report(['instances', index, 'id'], () => `duplicate instance id ${id} (first at instances[${first.index}])`);
      return;
    }
    byId.set(id, { index, role: ((item as Loose)?.static_info as Loose)?.role });
    if (idsReadable && !listed.has(id)) report(['instances', index, 'id'], () => `id ${id} is not listed in ids`);
  });
  if (instancesReadable) {
    for (const [id, index] of listed) {
      if (!byId.has(id)) report(['ids', index], () => `id ${id} has no entry in instances`);
    }
  }

  instanceList?.forEach((item, index) => {
    const role = ((item as Loose)?.static_info as Loose)?.role;
    const peers = listOf(((item as Loose)?.dynamic_info as Loose)?.peers);
    if (peers === undefined) return;
    // What the peers of this instance must be: P for a D, D for a P, anything for an undefined one.
    const wanted = role === ROLE_DECODE ? ROLE_PREFILL : role === ROLE_PREFILL ? ROLE_DECODE : undefined;
    const seen = new Map<number, number>();
    peers.forEach((peer, k) => {
      if (!isUint64(peer)) return;
      const at = ['instances', index, 'dynamic_info', 'peers', k];
      const first = seen.get(peer);
      if (first !== undefined) return report(at, () => `duplicate peer id ${peer} (first at peers[${first}])`);
      seen.set(peer, k);
      const target = byId.get(peer);
      if (target === undefined) {
        if (instancesReadable) report(at, () => `peer ${peer} is not an instance of this snapshot`);
        return;
      }
      if (wanted !== undefined && ROLE_CODES.includes(target.role as RoleCode) && target.role !== wanted) {
        report(at, () => {
          const peerRole = target.role as number;
          return `peer ${peer} has role ${peerRole} (${ROLE_NAME[peerRole]}); the peers of a ${ROLE_NAME[role as number]} instance must be ${ROLE_NAME[wanted]} instances (role ${wanted})`;
        });
      }
    });
  });
}
