/**
 * A hand-written check that accepts exactly the snapshots the Valibot schema accepts, without
 * building issue lists or copies. The Controller resends a valid snapshot every second, so this is
 * the path almost every refresh takes; a `false` sends the body through Valibot for the issue list.
 * `refresh-fast.test.ts` checks the equivalence on generated inputs.
 */
import {
  BLOCK_SIZE_MAX,
  isIpString,
  isNonEmptyString,
  isPortString,
  isUint64,
  isUintIn,
  MAX_INSTANCES,
  ROLE_DECODE,
  ROLE_PREFILL,
  ROLE_UNDEFINED,
  TOTAL_SLOTS_MAX,
  UINT32_MAX,
} from './refresh-limits.ts';
import { kvEventsIssue } from './kv-endpoint.ts';

type Obj = Record<string, unknown>;
const isObject = (x: unknown): x is Obj => typeof x === 'object' && x !== null;

/**
 * Whether a parsed body is a fully valid refresh snapshot.
 * @example if (!isValidSnapshot(body)) issues = v.safeParse(RefreshSchema, body, { abortEarly: false }).issues;
 */
export function isValidSnapshot(body: unknown): boolean {
  return checkSnapshot(body, false) !== SNAPSHOT_INVALID;
}

/** checkSnapshot's verdicts: not a valid snapshot; */
export const SNAPSHOT_INVALID = 0;
/** valid (with keys beyond the schema's, in another order, or not asked about); */
export const SNAPSHOT_VALID = 1;
/**
 * valid, and every object's keys are the schema's in the schema's order (peers, optional, last):
 * the registry then holds such an instance as its fields alone and rebuilds the object from them as
 * it came. The check has seen every known key present (peers only in some dynamic_info), so the
 * same keys in the same order mean the same set.
 */
export const SNAPSHOT_PLAIN = 2;

/**
 * isValidSnapshot, and with `keys` also whether the snapshot is plain (SNAPSHOT_PLAIN): each
 * object's keys walked in the same pass over the instances as their values, while all so far were
 * plain. One pass rather than two: the second walked thousands of objects just parsed once more.
 * @example if (checkSnapshot(JSON.parse(text), true) === SNAPSHOT_PLAIN) markPlain(snapshot);
 */
export function checkSnapshot(body: unknown, keys: boolean): number {
  if (!isObject(body)) return SNAPSHOT_INVALID;
  const { ids, instances } = body;
  if (!Array.isArray(ids) || !Array.isArray(instances)) return SNAPSHOT_INVALID;
  const n = instances.length;
  // Same set without duplicates on both sides implies equal lengths.
  if (n > MAX_INSTANCES || ids.length !== n) return SNAPSHOT_INVALID;

  let plain = keys && keysInOrder(body, SNAPSHOT_KEYS);
  let maxId = 0;
  for (let i = 0; i < n; i++) {
    const instance = instances[i];
    if (!isValidInstance(instance)) return SNAPSHOT_INVALID;
    if (plain) plain = instanceKeysInOrder(instance);
    if ((instance.id as number) > maxId) maxId = instance.id as number;
  }
  const roles = new RoleIndex(maxId);
  for (let i = 0; i < n; i++) {
    const instance = instances[i] as Obj;
    if (!roles.add(instance.id as number, (instance.static_info as Obj).role as number)) return SNAPSHOT_INVALID;
  }
  for (let i = 0; i < n; i++) {
    const id = ids[i];
    if (!isUint64(id) || !roles.list(id)) return SNAPSHOT_INVALID;
  }
  for (let i = 0; i < n; i++) {
    const instance = instances[i] as Obj;
    const peers = (instance.dynamic_info as Obj).peers as number[] | undefined;
    if (peers !== undefined && !arePeersValid(peers, (instance.static_info as Obj).role as number, roles)) return SNAPSHOT_INVALID;
  }
  return plain ? SNAPSHOT_PLAIN : SNAPSHOT_VALID;
}

/** The schema's keys of each object, in the schema's (and the Controller's) order. */
export const SNAPSHOT_KEYS: readonly string[] = ['ids', 'instances'];
export const INSTANCE_KEYS: readonly string[] = ['id', 'ip', 'port', 'metric_port', 'model_name', 'static_info', 'dynamic_info'];
export const STATIC_KEYS: readonly string[] = [
  'group_id',
  'max_seq_len',
  'max_output_len',
  'total_slots_num',
  'total_block_num',
  'block_size',
  'label',
  'role',
];
/** avail_slots_num, avail_block_num, then peers when present. */
export const DYNAMIC_KEYS: readonly string[] = ['avail_slots_num', 'avail_block_num', 'peers'];

/** A valid instance's own keys and those of its static and dynamic info, each the schema's in order. */
function instanceKeysInOrder(instance: Obj): boolean {
  return (
    keysInOrder(instance, INSTANCE_KEYS) &&
    keysInOrder(instance.static_info as Obj, STATIC_KEYS) &&
    keysInOrder(instance.dynamic_info as Obj, DYNAMIC_KEYS)
  );
}

/**
 * Whether `o`'s own keys are `keys` in that order, or a prefix of them one short of the whole
 * only for the optional last one (peers). Walked with for-in, not Object.keys: the latter is
 * quicker in a tight loop, but builds an array per object (three per instance), and end to end over
 * HTTP a 4096-instance changed refresh cost more CPU with it (2.47× and 2.84× the raw server against
 * 2.11× and 2.45×, two same-run comparisons).
 */
function keysInOrder(o: Obj, keys: readonly string[]): boolean {
  let n = 0;
  for (const key in o) if (key !== keys[n++]) return false;
  return n === keys.length || (keys === DYNAMIC_KEYS && n === keys.length - 1);
}

/** Ids up to this are indexed in arrays (clusters number their instances from 0); larger ones in maps. */
const DENSE_IDS_MAX = 4 * MAX_INSTANCES;

/**
 * The role of each instance id of a snapshot, and which ids `ids` listed. Arrays indexed by id when
 * the ids are small, as they usually are: a map and a set of 4096 entries cost a third of the
 * whole check. The arrays are kept from one check to the next (a check runs to its end before
 * another starts): an entry counts only when its stamp is this check's, so nothing is cleared or
 * allocated per snapshot.
 */
class RoleIndex {
  readonly #dense: boolean;
  readonly #stamp: number;
  /** Only for large ids (made then: most snapshots never need them). */
  readonly #roles: Map<number, number> | undefined;
  readonly #listed: Set<number> | undefined;

  constructor(maxId: number) {
    this.#dense = maxId <= DENSE_IDS_MAX;
    if (this.#dense) {
      this.#stamp = DenseScratch.next(maxId + 1);
    } else {
      this.#stamp = 0;
      this.#roles = new Map();
      this.#listed = new Set();
    }
  }

  /** Records an instance's role (a code below 256); false when the id was recorded already. */
  add(id: number, role: number): boolean {
    if (this.#dense) {
      if (DenseScratch.roleStamps[id] === this.#stamp) return false;
      DenseScratch.roleStamps[id] = this.#stamp;
      DenseScratch.roles[id] = role;
      return true;
    }
    const roles = this.#roles!;
    if (roles.has(id)) return false;
    roles.set(id, role);
    return true;
  }

  /** The role of an instance id, or undefined for an id no instance has. */
  role(id: number): number | undefined {
    if (!this.#dense) return this.#roles!.get(id);
    return id < DenseScratch.roles.length && DenseScratch.roleStamps[id] === this.#stamp ? DenseScratch.roles[id] : undefined;
  }

  /** Marks an id as listed in `ids`; false for an id no instance has, or one listed already. */
  list(id: number): boolean {
    if (!this.#dense) {
      const ids = this.#listed!;
      if (!this.#roles!.has(id) || ids.has(id)) return false;
      ids.add(id);
      return true;
    }
    if (this.role(id) === undefined || DenseScratch.listedStamps[id] === this.#stamp) return false;
    DenseScratch.listedStamps[id] = this.#stamp;
    return true;
  }
}

/** The dense index's arrays, shared by every check, and the stamp of the check under way. */
const DenseScratch = {
  roles: new Uint8Array(0),
  roleStamps: new Uint32Array(0),
  listedStamps: new Uint32Array(0),
  stamp: 0,

  /** A fresh stamp for a check of ids below `size`, the arrays grown to hold them. */
  next(size: number): number {
    if (this.roles.length < size) {
      // Doubling up to the dense limit: a cluster that grows does not regrow them per instance.
      const length = Math.min(DENSE_IDS_MAX + 1, Math.max(size, 2 * this.roles.length, 64));
      this.roles = new Uint8Array(length);
      this.roleStamps = new Uint32Array(length);
      this.listedStamps = new Uint32Array(length);
      this.stamp = 0;
    }
    if (this.stamp === UINT32_MAX) {
      this.roleStamps.fill(0);
      this.listedStamps.fill(0);
      this.stamp = 0;
    }
    return ++this.stamp;
  },
};

function isValidInstance(x: unknown): x is Obj {
  if (!isObject(x)) return false;
  const s = x.static_info;
  const d = x.dynamic_info;
  if (!isObject(s) || !isObject(d)) return false;
  if (!isUint64(x.id) || !isIpString(x.ip) || !isPortString(x.port) || !isPortString(x.metric_port) || !isNonEmptyString(x.model_name)) {
    return false;
  }
  const maxSeqLen = s.max_seq_len;
  const totalSlots = s.total_slots_num;
  const totalBlocks = s.total_block_num;
  const role = s.role;
  if (
    !isUint64(s.group_id) ||
    !isUintIn(maxSeqLen, 1, UINT32_MAX) ||
    !isUintIn(s.max_output_len, 1, maxSeqLen - 1) ||
    !isUintIn(totalSlots, 1, TOTAL_SLOTS_MAX) ||
    !isUintIn(totalBlocks, 1, UINT32_MAX) ||
    !isUintIn(s.block_size, 1, BLOCK_SIZE_MAX) ||
    (s.label !== 2 && s.label !== 3) ||
    (role !== ROLE_PREFILL && role !== ROLE_DECODE && role !== ROLE_UNDEFINED)
  ) {
    return false;
  }
  if (!isUintIn(d.avail_slots_num, 0, totalSlots) || !isUintIn(d.avail_block_num, 0, totalBlocks)) return false;
  if (
    (x.kv_events_endpoint !== undefined || x.kv_events_replay_endpoint !== undefined || x.kv_events_dp_size !== undefined) &&
    kvEventsIssue(x) !== undefined
  )
    return false;
  const peers = d.peers;
  if (peers === undefined) return role !== ROLE_DECODE;
  if (!Array.isArray(peers)) return false;
  for (let k = 0; k < peers.length; k++) if (!isUint64(peers[k])) return false;
  return true;
}

/** Below this length a duplicate scan beats building a Set (a group holds at most 16 instances). */
const PEERS_SCAN_MAX = 16;

function arePeersValid(peers: readonly number[], role: number, roles: RoleIndex): boolean {
  const wanted = role === ROLE_DECODE ? ROLE_PREFILL : role === ROLE_PREFILL ? ROLE_DECODE : undefined;
  for (let k = 0; k < peers.length; k++) {
    const peerRole = roles.role(peers[k]!);
    if (peerRole === undefined || (wanted !== undefined && peerRole !== wanted)) return false;
  }
  if (peers.length <= PEERS_SCAN_MAX) {
    for (let k = 1; k < peers.length; k++) for (let j = 0; j < k; j++) if (peers[j] === peers[k]) return false;
    return true;
  }
  return new Set(peers).size === peers.length;
}
