/**
 * The nesting limit of json-depth.ts applied to values that did not come through pdlink's body
 * reader: a gateway calling the plugin API directly can hand over any object, and what pdlink
 * stores is later compared and serialised by recursive code. The walk stops at the limit, so it is
 * itself safe on any value, cyclic ones included (a cycle is infinitely deep).
 */
import { UnsafeInteger } from './exact-json.ts';

/**
 * The path to the first array or object of `value` nested deeper than `limit` levels (the value
 * itself is level 1; an UnsafeInteger marker is a number, not a level), or undefined.
 * @example depthOverflowPath({ a: [[1]] }, 2) // ['a', 0]
 */
export function depthOverflowPath(value: unknown, limit: number): (string | number)[] | undefined {
  const path: (string | number)[] = [];
  return overflows(value, limit, path) ? path.reverse() : undefined;
}

/** True when `value` nests deeper than `left` levels; on true, `path` holds the way down, innermost first. */
function overflows(value: unknown, left: number, path: (string | number)[]): boolean {
  if (typeof value !== 'object' || value === null || value instanceof UnsafeInteger) return false;
  if (left === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (overflows(value[i], left - 1, path)) {
        path.push(i);
        return true;
      }
    }
    return false;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (Object.hasOwn(record, key) && overflows(record[key], left - 1, path)) {
      path.push(key);
      return true;
    }
  }
  return false;
}
