/**
 * Equality of two instance objects that hold only the refresh schema's keys. The registry compares
 * every listed instance with the one it holds on each refresh; for such objects the fifteen known
 * fields and the peers decide it, read directly instead of walked key by key. The fields a refresh
 * usually changes (free slots and blocks) are read first, so a changed instance is told after two
 * reads.
 */

type Obj = Readonly<Record<string, unknown>>;

/**
 * Whether two instance objects with only the schema's keys (as the plain refresh parse vouches)
 * are equal. Objects with other keys need the structural comparison (wireEqual).
 * @example knownFieldsEqual(held.wire, snapshot.instances[0]) // false when avail_slots_num moved
 */
export function knownFieldsEqual(a: Obj, b: Obj): boolean {
  if (a === b) return true; // the same object, applied again
  const ad = a.dynamic_info as Obj;
  const bd = b.dynamic_info as Obj;
  if (ad.avail_slots_num !== bd.avail_slots_num || ad.avail_block_num !== bd.avail_block_num) return false;
  if (!samePeers(ad.peers as readonly unknown[] | undefined, bd.peers as readonly unknown[] | undefined)) return false;
  if (a.id !== b.id || a.ip !== b.ip || a.port !== b.port || a.metric_port !== b.metric_port || a.model_name !== b.model_name) return false;
  const as = a.static_info as Obj;
  const bs = b.static_info as Obj;
  return (
    as === bs ||
    (as.group_id === bs.group_id &&
      as.max_seq_len === bs.max_seq_len &&
      as.max_output_len === bs.max_output_len &&
      as.total_slots_num === bs.total_slots_num &&
      as.total_block_num === bs.total_block_num &&
      as.block_size === bs.block_size &&
      as.label === bs.label &&
      as.role === bs.role)
  );
}

/** Same ids in the same order (the wire order is part of the object), or both absent. */
function samePeers(a: readonly unknown[] | undefined, b: readonly unknown[] | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
