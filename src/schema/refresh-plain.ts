/**
 * The refresh route's own body parser. parseJsonExact scans the whole text before parsing it (depth,
 * long digit runs), which on a 4096-instance snapshot costs about as much as the parse itself. A
 * valid snapshot whose every key is one the schema knows needs neither: its known fields nest four
 * levels at most and hold only safe integers (the fast check rejects anything else), so nothing in
 * it can be too deep or lose precision. Such a body is parsed once with plain `JSON.parse` and
 * validated on the way. A valid snapshot with other keys too is judged by those keys' values alone:
 * within the depth limit and without a number beyond 2^53-1 (which only an integer literal of 16+
 * digits, or a float literal as large, parses to), `JSON.parse` gave exactly what the exact parse
 * would. Any other body is scanned as text (depth, long digit runs), and parsed again the exact way
 * only when the scan saw a long integer or the depth limit was passed, so it gets exactly the errors
 * and values it always did. `JSON.parse` itself builds values of any depth without recursing
 * (checked in refresh-plain.test.ts).
 */
import { markMeasuredJson, parseJsonMeasured } from '../core/exact-json.ts';
import { scanJsonText, WITHIN_LIMIT } from '../core/json-depth.ts';
import { MAX_JSON_DEPTH } from '../core/limits.ts';
import { checkSnapshot, DYNAMIC_KEYS, INSTANCE_KEYS, SNAPSHOT_KEYS, SNAPSHOT_PLAIN, SNAPSHOT_VALID, STATIC_KEYS } from './refresh-fast.ts';

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
 * known keys, or with other keys whose values are within the limits; else `JSON.parse`'s value when
 * the text scan finds nothing it would treat differently, and parseJsonExact when it does (which
 * throws the route's errors for empty, malformed, too deep).
 * @example readJsonRequest(request, { limitBytes, parse: parseRefreshText })
 */
export function parseRefreshText(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return parseJsonMeasured(text);
  }
  const verdict = checkSnapshot(value, true);
  if (verdict === SNAPSHOT_PLAIN) {
    // Plain says measured too (the registry asks isPlainSnapshot first): one weak mark, not two.
    plain.add(value as Obj);
    return value;
  }
  if (verdict === SNAPSHOT_VALID) {
    const snapshot = value as Obj;
    if (extrasWithinLimits(snapshot)) {
      markMeasuredJson(snapshot);
      return snapshot;
    }
    return parseJsonMeasured(text);
  }
  // Invalid (Valibot will explain it): the text scan tells whether the exact parse would differ.
  if (scanJsonText(text, MAX_JSON_DEPTH) !== WITHIN_LIMIT) return parseJsonMeasured(text);
  if (typeof value === 'object' && value !== null) markMeasuredJson(value);
  return value;
}

/**
 * Whether every value under a key the schema does not know, in a valid snapshot, nests within
 * MAX_JSON_DEPTH (counting the levels above it) and holds no number beyond 2^53-1: then the exact
 * parse would have built the same value. The known fields were checked by checkSnapshot.
 */
function extrasWithinLimits(snapshot: Obj): boolean {
  // Levels above a value: the snapshot (1), instances (2), an instance (3), its static/dynamic info (4).
  if (!extrasOf(snapshot, SNAPSHOT_KEY_SET, MAX_JSON_DEPTH - 1)) return false;
  const instances = snapshot.instances as Obj[];
  for (let i = 0; i < instances.length; i++) {
    const instance = instances[i]!;
    if (
      !extrasOf(instance, INSTANCE_KEY_SET, MAX_JSON_DEPTH - 3) ||
      !extrasOf(instance.static_info as Obj, STATIC_KEY_SET, MAX_JSON_DEPTH - 4) ||
      !extrasOf(instance.dynamic_info as Obj, DYNAMIC_KEY_SET, MAX_JSON_DEPTH - 4)
    ) {
      return false;
    }
  }
  return true;
}

function extrasOf(o: Obj, known: ReadonlySet<string>, levels: number): boolean {
  for (const key in o) if (!known.has(key) && !withinLimits(o[key], levels)) return false;
  return true;
}

/** Nests at most `levels` levels (an array or object is one) and holds no number beyond 2^53-1. */
function withinLimits(value: unknown, levels: number): boolean {
  if (typeof value === 'number') return Math.abs(value) <= Number.MAX_SAFE_INTEGER || !Number.isInteger(value);
  if (typeof value !== 'object' || value === null) return true;
  if (levels === 0) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!withinLimits(value[i], levels - 1)) return false;
    return true;
  }
  const record = value as Obj;
  for (const key in record) if (!withinLimits(record[key], levels - 1)) return false;
  return true;
}

const SNAPSHOT_KEY_SET: ReadonlySet<string> = new Set(SNAPSHOT_KEYS);
const INSTANCE_KEY_SET: ReadonlySet<string> = new Set(INSTANCE_KEYS);
const STATIC_KEY_SET: ReadonlySet<string> = new Set(STATIC_KEYS);
const DYNAMIC_KEY_SET: ReadonlySet<string> = new Set(DYNAMIC_KEYS);
