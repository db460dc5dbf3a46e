/**
 * Limits and leaf predicates of the refresh snapshot, shared by the Valibot schema (which explains
 * a rejection) and the hand-written fast check (which accepts the common all-valid body).
 */
import { isIP } from 'node:net';

/** Most instances one snapshot may carry (MindIE's cap). */
export const MAX_INSTANCES = 4096;
/** Inclusive range of `port` and `metric_port`, carried as decimal strings. */
export const PORT_MIN = 1024;
export const PORT_MAX = 65535;
export const UINT32_MAX = 4294967295;
/** uint64 fields are read as JSON numbers, so only integers up to 2^53−1 are exact. */
export const UINT64_MAX_EXACT = Number.MAX_SAFE_INTEGER;
/** `static_info.total_slots_num` is in [1, TOTAL_SLOTS_MAX]. */
export const TOTAL_SLOTS_MAX = 5000;
/** `static_info.block_size` is in [1, BLOCK_SIZE_MAX]. */
export const BLOCK_SIZE_MAX = 128;
/** Wire value of `static_info.role` → role. */
export const ROLE_BY_CODE = { 80: 'prefill', 68: 'decode', 85: 'undefined' } as const;
export type RoleCode = keyof typeof ROLE_BY_CODE;

/** Wire value of `static_info.label` (PD disaggregation only). */
export const LABEL_BY_CODE = { 2: 'prefill', 3: 'decode' } as const;
export type LabelCode = keyof typeof LABEL_BY_CODE;

/** `static_info.role`: 80 prefill, 68 decode, 85 undefined. */
export const ROLE_PREFILL = 80;
export const ROLE_DECODE = 68;
export const ROLE_UNDEFINED = 85;
export const ROLE_CODES: readonly RoleCode[] = [ROLE_PREFILL, ROLE_DECODE, ROLE_UNDEFINED];
/** `static_info.label`: 2 prefill, 3 decode. */
export const LABEL_CODES: readonly LabelCode[] = [2, 3];

/** Whether `x` is an integer in [min, max]. */
export function isUintIn(x: unknown, min: number, max: number): x is number {
  return typeof x === 'number' && Number.isInteger(x) && x >= min && x <= max;
}

/** Whether `x` is an exact uint64 (a JSON number cannot carry more than 2^53−1 exactly). */
export function isUint64(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= UINT64_MAX_EXACT;
}

/**
 * Whether `x` is a port as the wire carries it: a canonical decimal string in ["1024", "65535"].
 * Read digit by digit: every refresh checks two per instance, and a regex plus a number
 * conversion cost several times this.
 * @example isPortString('1025') // true; isPortString(' 1025'), isPortString('01025'), isPortString(1025) // false
 */
export function isPortString(x: unknown): x is string {
  if (typeof x !== 'string' || x.length < 4 || x.length > 5) return false;
  let port = 0;
  for (let i = 0; i < x.length; i++) {
    const digit = x.charCodeAt(i) - DIGIT_0;
    if (digit < 0 || digit > 9 || (i === 0 && digit === 0)) return false;
    port = port * 10 + digit;
  }
  return port >= PORT_MIN && port <= PORT_MAX;
}

/**
 * Whether `x` is IPv4 or IPv6 address text (as `isIP` from node:net decides). Dotted quads, what
 * clusters almost always carry, are read by hand; anything else goes to `isIP`.
 * @example isIpString('10.0.0.7') // true; isIpString('10.0.0.07') // false
 */
export function isIpString(x: unknown): x is string {
  if (typeof x !== 'string') return false;
  const quad = dottedQuad(x);
  return quad === QUAD_VALID || (quad === QUAD_UNSURE && isIP(x) !== 0);
}

const QUAD_VALID = 1;
const QUAD_INVALID = 0;
const QUAD_UNSURE = -1;

/**
 * Reads `text` as a dotted quad the way node:net's IPv4 rule does (four parts 0–255, no leading
 * zeros): QUAD_VALID, QUAD_INVALID for digits and dots that break the rule, QUAD_UNSURE for any
 * other character (IPv6 text, which isIP judges).
 */
function dottedQuad(text: string): number {
  let parts = 0;
  let value = 0;
  let digits = 0;
  let leadingZero = false;
  // A broken part decides nothing yet: a later ':' makes the text IPv6's to judge.
  let broken = false;
  for (let i = 0; i <= text.length; i++) {
    const c = i === text.length ? DOT : text.charCodeAt(i);
    if (c === DOT) {
      if (digits === 0 || (leadingZero && digits > 1) || digits > 3 || value > 255) broken = true;
      parts++;
      value = 0;
      digits = 0;
      continue;
    }
    const digit = c - DIGIT_0;
    if (digit < 0 || digit > 9) return QUAD_UNSURE;
    if (digits === 0) leadingZero = digit === 0;
    digits++;
    value = value * 10 + digit;
  }
  return broken || parts !== 4 ? QUAD_INVALID : QUAD_VALID;
}

const DIGIT_0 = 0x30;
const DOT = 0x2e;

/** Whether `x` is a string of at least one character. */
export function isNonEmptyString(x: unknown): x is string {
  return typeof x === 'string' && x.length > 0;
}
