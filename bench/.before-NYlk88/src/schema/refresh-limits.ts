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

const PORT_TEXT = /^[1-9][0-9]{3,4}$/;

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
 * @example isPortString('1025') // true; isPortString(' 1025'), isPortString('01025'), isPortString(1025) // false
 */
export function isPortString(x: unknown): x is string {
  if (typeof x !== 'string' || !PORT_TEXT.test(x)) return false;
  const port = Number(x);
  return port >= PORT_MIN && port <= PORT_MAX;
}

/** Whether `x` is IPv4 or IPv6 address text. */
export function isIpString(x: unknown): x is string {
  return typeof x === 'string' && isIP(x) !== 0;
}

/** Whether `x` is a string of at least one character. */
export function isNonEmptyString(x: unknown): x is string {
  return typeof x === 'string' && x.length > 0;
}
