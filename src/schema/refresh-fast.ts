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

type Obj = Record<string, unknown>;
const isObject = (x: unknown): x is Obj => typeof x === 'object' && x !== null;

/**
 * Whether a parsed body is a fully valid refresh snapshot.
 * @example if (!isValidSnapshot(body)) issues = v.safeParse(RefreshSchema, body, { abortEarly: false }).issues;
 */
export function isValidSnapshot(body: unknown): boolean {
  if (!isObject(body)) return false;
  const { ids, instances } = body;
  if (!Array.isArray(ids) || !Array.isArray(instances)) return false;
  const n = instances.length;
  // Same set without duplicates on both sides implies equal lengths.
  if (n > MAX_INSTANCES || ids.length !== n) return false;

  let maxId = 0;
  for (let i = 0; i < n; i++) {
    const instance = instances[i];
    if (!isValidInstance(instance)) return false;
    if ((instance.id as number) > maxId) maxId = instance.id as number;
  }
  const roles = new RoleIndex(maxId);
  for (let i = 0; i < n; i++) {
    const instance = instances[i] as Obj;
    if (!roles.add(instance.id as number, (instance.static_info as Obj).role as number)) return false;
  }
  for (let i = 0; i < n; i++) {
    const id = ids[i];
    if (!isUint64(id) || !roles.list(id)) return false;
  }
  for (let i = 0; i < n; i++) {
    const instance = instances[i] as Obj;
    const peers = (instance.dynamic_info as Obj).peers as number[] | undefined;
    if (peers !== undefined && !arePeersValid(peers, (instance.static_info as Obj).role as number, roles)) return false;
  }
  return true;
}

/** Ids up to this are indexed in arrays (clusters number their instances from 0); larger ones in maps. */
const DENSE_IDS_MAX = 4 * MAX_INSTANCES;

/**
 * The role of each instance id of a snapshot, and which ids `ids` listed. Arrays indexed by id when
 * the ids are small, as they usually are: a map and a set of 4096 entries cost a third of the
 * whole check.
 */
class RoleIndex {
  readonly #dense: Uint8Array | undefined;
  readonly #denseListed: Uint8Array | undefined;
  /** Only for large ids (made then: most snapshots never need them). */
  readonly #roles: Map<number, number> | undefined;
  readonly #listed: Set<number> | undefined;

  constructor(maxId: number) {
    if (maxId <= DENSE_IDS_MAX) {
      this.#dense = new Uint8Array(maxId + 1);
      this.#denseListed = new Uint8Array(maxId + 1);
    } else {
      this.#roles = new Map();
      this.#listed = new Set();
    }
  }

  /** Records an instance's role (a code below 256); false when the id was recorded already. */
  add(id: number, role: number): boolean {
    const dense = this.#dense;
    if (dense !== undefined) {
      if (dense[id] !== 0) return false;
      dense[id] = role;
      return true;
    }
    const roles = this.#roles!;
    if (roles.has(id)) return false;
    roles.set(id, role);
    return true;
  }

  /** The role of an instance id, or undefined for an id no instance has. */
  role(id: number): number | undefined {
    const dense = this.#dense;
    if (dense === undefined) return this.#roles!.get(id);
    const role = id < dense.length ? dense[id]! : 0;
    return role === 0 ? undefined : role;
  }

  /** Marks an id as listed in `ids`; false for an id no instance has, or one listed already. */
  list(id: number): boolean {
    const listed = this.#denseListed;
    if (listed === undefined) {
      const ids = this.#listed!;
      if (!this.#roles!.has(id) || ids.has(id)) return false;
      ids.add(id);
      return true;
    }
    if (this.role(id) === undefined || listed[id] !== 0) return false;
    listed[id] = 1;
    return true;
  }
}

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
