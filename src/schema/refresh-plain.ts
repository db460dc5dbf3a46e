/**
 * The refresh route's own body parser. parseJsonExact scans the whole text before parsing it (depth,
 * long digit runs), which on a 4096-instance snapshot costs about as much as the parse itself. A
 * valid snapshot whose every key is one the schema knows needs neither: its known fields nest four
 * levels at most and hold only safe integers (the fast check rejects anything else), so nothing in
 * it can be too deep or lose precision. Such a body is parsed once with plain `JSON.parse` and
 * validated on the way; any other body (unknown fields, invalid, too deep, huge integers) is parsed
 * again the exact way, so it gets exactly the errors and values it always did. `JSON.parse` itself
 * builds values of any depth without recursing (checked in refresh-plain.test.ts).
 */
import { markMeasuredJson, parseJsonExact } from '../core/exact-json.ts';
import { isValidSnapshot } from './refresh-fast.ts';

type Obj = Record<string, unknown>;

/** Snapshots this parser accepted as valid and plain, so validateRefresh need not check them again. */
const plain = new WeakSet<object>();

/**
 * Whether `value` came from parseRefreshText's plain path (valid, every key known).
 * @example if (isPlainSnapshot(body)) return { ok: true, snapshot: body };
 */
export function isPlainSnapshot(value: unknown): boolean {
  return typeof value === 'object' && value !== null && plain.has(value);
}

/**
 * Parses a refresh body's text: plain `JSON.parse` when the result is a valid snapshot with only
 * known keys, else parseJsonExact (which throws the route's errors for empty, malformed, too deep).
 * @example readJsonRequest(request, { limitBytes, parse: parseRefreshText })
 */
export function parseRefreshText(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return parseJsonExact(text);
  }
  if (!isValidSnapshot(value) || !hasOnlyKnownKeys(value as Obj)) return parseJsonExact(text);
  markMeasuredJson(value as Obj);
  plain.add(value as Obj);
  return value;
}

/**
 * Whether a snapshot isValidSnapshot accepted has no key beyond the schema's. The fast check has
 * seen every known key present (peers only in some dynamic_info), so equal counts mean equal sets.
 */
function hasOnlyKnownKeys(snapshot: Obj): boolean {
  if (countKeys(snapshot) !== 2) return false;
  const instances = snapshot.instances as Obj[];
  for (let i = 0; i < instances.length; i++) {
    const instance = instances[i]!;
    const dynamic = instance.dynamic_info as Obj;
    if (
      countKeys(instance) !== INSTANCE_KEYS ||
      countKeys(instance.static_info as Obj) !== STATIC_KEYS ||
      countKeys(dynamic) !== (dynamic.peers === undefined ? DYNAMIC_KEYS : DYNAMIC_KEYS + 1)
    ) {
      return false;
    }
  }
  return true;
}

/** id, ip, port, metric_port, model_name, static_info, dynamic_info. */
const INSTANCE_KEYS = 7;
/** group_id, max_seq_len, max_output_len, total_slots_num, total_block_num, block_size, label, role. */
const STATIC_KEYS = 8;
/** avail_slots_num, avail_block_num (and peers when present). */
const DYNAMIC_KEYS = 2;

function countKeys(o: Obj): number {
  let n = 0;
  for (const _ in o) n++;
  return n;
}
