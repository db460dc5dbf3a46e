/**
 * What a leader controller keeps in the store so that the next one continues instead of starting
 * over, one record per instance: its desired spec (scale-out and -in through the API included),
 * its entry in the topology file as the leader last loaded it, its role and group, a hash of the
 * role body its agent accepted, whether it has joined, a drain or a move in progress, and its entry
 * in the last snapshot sent. Records are stored in compressed chunks under one manifest
 * (store/chunked.ts). Read loosely: a record that does not parse is left out, and the new leader
 * decides that instance afresh.
 */
import { createHash } from 'node:crypto';
import type { Role } from '../schema/role.ts';
import type { RefreshBody, RefreshInstanceBody } from './snapshot.ts';
import type { DesiredInstance } from './types.ts';

/** A stored role body is known by this prefix and a hash of its key (see postedHash). */
export const POSTED_HASH_PREFIX = 'posted:';

export interface StoredAssignment {
  readonly id: number;
  readonly role: Role;
  readonly group: number;
  /**
   * Key of the role body the agent accepted (undefined: none in force); read back from the store
   * it is `posted:<hash>`, to be matched against the key the new leader plans (takeover.ts).
   */
  readonly postedKey: string | undefined;
  readonly joined: boolean;
  /** A planned removal under way since then (it continues under the next leader). */
  readonly drainRequestedAt?: number | undefined;
  /** A move between roles under way (a planner's record, kept verbatim for the next leader). */
  readonly move?: unknown;
}

export interface StoredState {
  /** undefined: nothing (trustworthy) stored: the first leader of a cluster, or a failed write invalidated it. */
  readonly desired: readonly DesiredInstance[] | undefined;
  /** Every member, the draining ones included. */
  readonly assignments: readonly StoredAssignment[];
  readonly generation: number;
  /** Specs of the draining members (not desired, still members until drained). */
  readonly draining?: readonly DesiredInstance[];
  /** The snapshot the last leader sent (shape as of its last change), when stored. */
  readonly snapshot?: RefreshBody | undefined;
}

/** The state of a cluster with nothing stored. */
export const NOTHING_STORED: StoredState = { desired: undefined, assignments: [], generation: 0 };

/** One instance's record, as stored (snake_case keys: it is a wire format). */
export interface InstanceRecord {
  readonly id: number;
  /** Its desired spec (draining members included); absent when it is only in the topology file. */
  readonly spec?: DesiredInstance;
  /** Its entry in the topology file: `same` as spec, another spec, or absent (added through the API). */
  readonly file?: DesiredInstance | 'same';
  readonly role?: Role;
  readonly group?: number;
  readonly posted?: string;
  readonly joined?: boolean;
  readonly drain_requested_at?: number;
  readonly move?: unknown;
  readonly snapshot?: RefreshInstanceBody;
}

/**
 * The hash a stored role body key is kept as (a body names every peer's devices: kilobytes).
 * @example postedHash(member.postedKey)
 */
export function postedHash(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 32);
}

/**
 * The state and the topology file's instances the records describe; what does not parse is left out.
 * @example const { state, file } = decodeRecords(read.records, read.meta);
 */
export function decodeRecords(records: readonly unknown[], meta: unknown): { state: StoredState; file: DesiredInstance[] } {
  const desired: DesiredInstance[] = [];
  const draining: DesiredInstance[] = [];
  const assignments: StoredAssignment[] = [];
  const file: DesiredInstance[] = [];
  const instances: RefreshInstanceBody[] = [];
  for (const r of records) {
    if (!isObject(r) || !Number.isSafeInteger(r['id'])) continue;
    const id = r['id'] as number;
    const spec = isSpec(r['spec']) ? r['spec'] : undefined;
    const fileSpec = r['file'] === 'same' ? spec : isSpec(r['file']) ? r['file'] : undefined;
    if (fileSpec !== undefined) file.push(fileSpec);
    if (isObject(r['snapshot']) && r['snapshot']['id'] === id) instances.push(r['snapshot'] as unknown as RefreshInstanceBody);
    if (spec === undefined) continue;
    const drainAt = Number.isSafeInteger(r['drain_requested_at']) ? (r['drain_requested_at'] as number) : undefined;
    (drainAt === undefined ? desired : draining).push(spec);
    const role = r['role'];
    if ((role === 'prefill' || role === 'decode') && Number.isSafeInteger(r['group']) && typeof r['joined'] === 'boolean') {
      assignments.push({
        id,
        role,
        group: r['group'] as number,
        postedKey: typeof r['posted'] === 'string' ? POSTED_HASH_PREFIX + r['posted'] : undefined,
        joined: r['joined'],
        drainRequestedAt: drainAt,
        ...(r['move'] === undefined ? {} : { move: r['move'] }),
      });
    }
  }
  const generation = isObject(meta) && Number.isSafeInteger(meta['generation']) ? (meta['generation'] as number) : 0;
  instances.sort((a, b) => a.id - b.id);
  const snapshot = instances.length === 0 ? undefined : { ids: instances.map((i) => i.id), instances };
  const byId = (a: { id: number }, b: { id: number }): number => a.id - b.id;
  return { state: { desired: desired.sort(byId), assignments, generation, draining, snapshot }, file: file.sort(byId) };
}

/**
 * The snapshot records carry, for a Coordinator that starts from the store.
 * @example storedSnapshot(read.records)
 */
export function storedSnapshot(records: readonly unknown[]): RefreshBody | undefined {
  return decodeRecords(records, undefined).state.snapshot;
}

function isSpec(x: unknown): x is DesiredInstance {
  return isObject(x) && Number.isSafeInteger(x['id']) && typeof x['manageUrl'] === 'string' && Array.isArray(x['devices']);
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
