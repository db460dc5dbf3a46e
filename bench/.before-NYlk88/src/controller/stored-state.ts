/**
 * What a leader controller keeps in the store so that the next one continues instead of starting
 * over: the desired instances (scale-out and -in through the API included), each instance's role,
 * group, the role body in force and whether it has joined, and how many snapshots were sent. Read
 * loosely: a record that does not parse is left out, and the new leader decides that part afresh.
 */
import type { Role } from '../schema/role.ts';
import type { DesiredInstance } from './types.ts';

export interface StoredAssignment {
  readonly id: number;
  readonly role: Role;
  readonly group: number;
  /** Key of the role body the agent accepted (undefined: none in force). */
  readonly postedKey: string | undefined;
  readonly joined: boolean;
}

export interface StoredState {
  /** undefined: nothing stored yet (the first leader of a cluster). */
  readonly desired: readonly DesiredInstance[] | undefined;
  readonly assignments: readonly StoredAssignment[];
  readonly generation: number;
}

/**
 * Reads the stored assignments; entries that are not assignments are dropped.
 * @example readAssignments(await store.get(KEYS.assignments))
 */
export function readAssignments(text: string | undefined): StoredAssignment[] {
  const list = parse(text);
  if (!Array.isArray(list)) return [];
  return list.filter(
    (a): a is StoredAssignment =>
      isObject(a) &&
      Number.isSafeInteger(a['id']) &&
      (a['role'] === 'prefill' || a['role'] === 'decode') &&
      Number.isSafeInteger(a['group']) &&
      (a['postedKey'] === undefined || typeof a['postedKey'] === 'string') &&
      typeof a['joined'] === 'boolean',
  );
}

/** Reads the stored desired instances; undefined when none are stored or they do not parse. */
export function readDesired(text: string | undefined): DesiredInstance[] | undefined {
  const list = parse(text);
  if (!Array.isArray(list)) return undefined;
  const ok = list.every(
    (d) => isObject(d) && Number.isSafeInteger(d['id']) && typeof d['manageUrl'] === 'string' && Array.isArray(d['devices']),
  );
  return ok ? (list as DesiredInstance[]) : undefined;
}

/** The generation of a stored snapshot record (`{generation, snapshot}`); 0 when none. */
export function readGeneration(text: string | undefined): number {
  const record = parse(text);
  return isObject(record) && Number.isSafeInteger(record['generation']) ? (record['generation'] as number) : 0;
}

function parse(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
