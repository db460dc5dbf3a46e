/**
 * JSON that keeps every integer exact. `JSON.parse` rounds integers beyond ±(2^53−1); pdlink must
 * reject them by path where a schema needs a number, and carry them through unchanged where it does
 * not (unknown fields of a snapshot, a client's `seed`). Parsing leaves an `UnsafeInteger` marker in
 * their place, and the marker writes itself back with its original digits, so plain `JSON.stringify`
 * round-trips them with no replacer. Text nested deeper than MAX_JSON_DEPTH is refused before it is
 * parsed (json-depth.ts), so every value returned here is safe to recurse over.
 */
import { errors } from './errors.ts';
import { scanJsonText, WITHIN_LIMIT_LONG_DIGITS } from './json-depth.ts';
import { MAX_JSON_DEPTH } from './limits.ts';

/** `JSON.rawJSON` (ES2025 JSON source text access): Bun has it, the bundled lib typings not yet. */
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/** Marker left in place of an integer literal beyond ±(2^53−1), so schemas can reject it by path. */
export class UnsafeInteger {
  constructor(readonly source: string) {}

  /**
   * Serialises as the original digits, so the value round-trips exactly. `JSON.stringify` calls this
   * before any replacer, so a replacer never sees the marker itself.
   */
  toJSON(): unknown {
    return rawJSON(this.source);
  }
}

/**
 * Parses JSON text, replacing integers that would lose precision by `UnsafeInteger` markers; throws
 * the PdlinkError a route answers with (too deep, empty, malformed).
 * @example parseJsonExact('{"seed":18446744073709551615}') // { seed: UnsafeInteger('18446744073709551615') }
 */
export function parseJsonExact(text: string): unknown {
  const scan = scanJsonText(text, MAX_JSON_DEPTH);
  if (scan >= 0) throw errors.nestedTooDeep(MAX_JSON_DEPTH, scan);
  let value: unknown;
  try {
    // Only a run of 16+ digits can hold an integer beyond 2^53-1; the reviver costs ~10x, so it
    // runs only when the depth scan saw such a run outside strings.
    value = scan === WITHIN_LIMIT_LONG_DIGITS ? JSON.parse(text, exactReviver) : JSON.parse(text);
  } catch (cause) {
    if (text.trim() === '') throw errors.emptyBody();
    throw errors.malformedJson(cause);
  }
  return value;
}

/**
 * parseJsonExact, its value then vouched for (isMeasuredJson): for a body that goes on to code which
 * bounds values built by anyone (a refresh snapshot, which the registry holds). Other bodies (every
 * proxied request, P's answer) are not marked: a weak set entry per body cost the proxy an insert
 * and the collector a sweep, for a mark nothing read.
 * @example registry.apply(parseRefresh(parseJsonMeasured(text)));
 */
export function parseJsonMeasured(text: string): unknown {
  const value = parseJsonExact(text);
  if (typeof value === 'object' && value !== null) measured.add(value);
  return value;
}

/** The values vouched for, held weakly: their depth was measured on the text. */
const measured = new WeakSet<object>();

/**
 * Vouches for a value parsed another way whose depth and integers its parser checked as strictly
 * as parseJsonExact would have (a refresh body whose every key is known, refresh-plain.ts).
 * @example if (plain) markMeasuredJson(snapshot);
 */
export function markMeasuredJson(value: object): void {
  measured.add(value);
}

/**
 * Whether `value` is one parseJsonMeasured returned or markMeasuredJson vouched for, so nests at
 * most MAX_JSON_DEPTH levels (pdlink does not modify parsed bodies). Lets code that must bound values built by anyone (the registry)
 * skip walking the ones it knows.
 * @example if (!isMeasuredJson(snapshot)) checkEveryInstance(snapshot);
 */
export function isMeasuredJson(value: unknown): boolean {
  return typeof value === 'object' && value !== null && measured.has(value);
}

function exactReviver(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  const source = context?.source;
  if (typeof value === 'number' && !Number.isSafeInteger(value) && source !== undefined && /^-?\d+$/.test(source)) {
    return new UnsafeInteger(source);
  }
  return value;
}
