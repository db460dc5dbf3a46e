/**
 * Argument checks of the ledger's programmatic API. An embedding gateway may call it from plain
 * JavaScript, so every value is checked at run time and a bad one is named by its field.
 */
import { errors } from '../core/errors.ts';
import { INT32_MAX } from '../core/limits.ts';
import { RELEASE_REASONS, type ReleaseReason, type TransferPhase } from './records.ts';
import type { ReserveRequest } from './types.ts';

/** Longest accepted request id (X-Request-Id values are UUIDs or similar; this leaves ample room). */
export const MAX_REQUEST_ID_LENGTH = 512;
/** Longest lease: the int32 millisecond range every timeout in pdlink uses. */
export const MAX_LEASE_MS = INT32_MAX;
/** Longest failure code. */
export const MAX_CODE_LENGTH = 128;

/**
 * Returns `value` if it is a usable request id.
 * @example requestIdArg('req-1', 'requestId')
 */
export function requestIdArg(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length === 0) throw errors.invalidArgument(path, 'must be a non-empty string');
  if (value.length > MAX_REQUEST_ID_LENGTH) throw errors.invalidArgument(path, `must be at most ${MAX_REQUEST_ID_LENGTH} characters`);
  return value;
}

/**
 * Returns `value` if it is a non-negative safe integer (an instance id or a count).
 * @example countArg(16, 'pBlocks')
 */
export function countArg(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw errors.invalidArgument(path, 'must be a non-negative integer');
  }
  return value;
}

/**
 * Returns `value` if it is a lease length in (0, 2^31−1] milliseconds.
 * @example leaseArg(30_000, 'leaseMs')
 */
export function leaseArg(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_LEASE_MS) {
    throw errors.invalidArgument(path, `must be a number of milliseconds in (0, ${MAX_LEASE_MS}]`);
  }
  return value;
}

/**
 * Returns `value` if it is a failure code: a non-empty string such as `LLM_WAIT_PROC_TIMEOUT`.
 * @example codeArg('upstream_failed', 'code')
 */
export function codeArg(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_CODE_LENGTH) {
    throw errors.invalidArgument(path, `must be a non-empty string of at most ${MAX_CODE_LENGTH} characters`);
  }
  return value;
}

/**
 * Returns `value` if it is one of the release reasons.
 * @example reasonArg('client_abort', 'reason')
 */
export function reasonArg(value: unknown, path: string): ReleaseReason {
  if (typeof value !== 'string' || !(RELEASE_REASONS as readonly string[]).includes(value)) {
    throw errors.invalidArgument(path, `must be one of ${RELEASE_REASONS.join(', ')}`);
  }
  return value as ReleaseReason;
}

/**
 * Returns `value` if it is a phase a record may begin.
 * @example phaseArg('prefilling', 'phase')
 */
export function phaseArg(value: unknown, path: string): TransferPhase {
  if (value !== 'prefilling' && value !== 'transferring') throw errors.invalidArgument(path, 'must be prefilling or transferring');
  return value;
}

/** A reservation's arguments, checked, with their defaults filled in. */
export interface ReserveArgs {
  readonly requestId: string;
  readonly clientRequestId: string | null;
  readonly p: number;
  readonly d: number;
  readonly slots: number;
  readonly pBlocks: number;
  readonly dBlocks: number;
  readonly leaseMs: number;
  readonly phase: TransferPhase | undefined;
}

/**
 * Checks every field of a reservation, naming the first bad one; one slot and `defaultLeaseMs` unless given.
 * @example const args = reserveArgs({ requestId: 'r1', p: 0, d: 1, pBlocks: 16, dBlocks: 16 }, 30_000);
 */
export function reserveArgs(request: ReserveRequest, defaultLeaseMs: number): ReserveArgs {
  return {
    requestId: requestIdArg(request.requestId, 'requestId'),
    clientRequestId: request.clientRequestId === undefined ? null : requestIdArg(request.clientRequestId, 'clientRequestId'),
    p: countArg(request.p, 'p'),
    d: countArg(request.d, 'd'),
    slots: countArg(request.slots ?? 1, 'slots'),
    pBlocks: countArg(request.pBlocks, 'pBlocks'),
    dBlocks: countArg(request.dBlocks, 'dBlocks'),
    leaseMs: leaseArg(request.leaseMs ?? defaultLeaseMs, 'leaseMs'),
    phase: request.phase === undefined ? undefined : phaseArg(request.phase, 'phase'),
  };
}
