/**
 * How the registry compares and measures the wire objects of instances it did not take apart
 * (snapshots with keys beyond the schema's, or built by code): structural equality within the
 * nesting limit, and the check that refuses an instance nested deeper than it.
 */
import { errors } from '../core/errors.ts';
import { UnsafeInteger } from '../core/exact-json.ts';
import { MAX_JSON_DEPTH } from '../core/limits.ts';
import { depthOverflowPath } from '../core/value-depth.ts';
import type { RefreshInstance } from '../schema/refresh.ts';

/** Throws the error naming where `wire` (instance `index` of a snapshot) nests deeper than MAX_JSON_DEPTH. */
export function checkDepth(wire: RefreshInstance, index: number): void {
  const path = depthOverflowPath(wire, MAX_JSON_DEPTH);
  if (path === undefined) return;
  const at = `instances[${index}]${path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${key}`)).join('')}`;
  throw errors.invalidBody([{ path: at, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }]);
}

/**
 * Structural equality of two JSON values as `readJsonBody` produces them (UnsafeInteger markers
 * compare by their digits). Key order does not matter. Values nested deeper than MAX_JSON_DEPTH
 * compare unequal rather than being walked to the bottom, so no value can exhaust the stack.
 */
export function wireEqual(a: unknown, b: unknown): boolean {
  return equalWithin(a, b, MAX_JSON_DEPTH);
}

function equalWithin(a: unknown, b: unknown, levels: number): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (a instanceof UnsafeInteger || b instanceof UnsafeInteger) {
    return a instanceof UnsafeInteger && b instanceof UnsafeInteger && a.source === b.source;
  }
  if (levels === 0) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!equalWithin(a[i], b[i], levels - 1)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let keys = 0;
  for (const key in x) {
    if (!Object.hasOwn(y, key) || !equalWithin(x[key], y[key], levels - 1)) return false;
    keys++;
  }
  for (const _ in y) if (--keys < 0) return false;
  return keys === 0;
}
