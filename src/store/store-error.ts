/**
 * What went wrong with a store call, in the four kinds a caller acts on differently: the store
 * could not be reached (retry on another member, ride it out), it is out of space (etcd's NOSPACE
 * alarm: an operator must compact and defragment), the request was too large, or it was refused for
 * another reason (a lapsed lease, a bad argument). Only `unreachable` says anything about
 * connectivity: a refused write comes from a store that answered.
 */

export type StoreErrorReason = 'unreachable' | 'no_space' | 'too_large' | 'refused';

export const STORE_ERROR_REASONS: readonly StoreErrorReason[] = ['unreachable', 'no_space', 'too_large', 'refused'];

export class StoreError extends Error {
  readonly reason: StoreErrorReason;
  /** The key (relative to the cluster prefix) the call was about, when it was about one. */
  readonly key: string | undefined;

  /** @example throw new StoreError('no_space', 'controller/state', 'etcd is out of space'); */
  constructor(reason: StoreErrorReason, key: string | undefined, message: string, options?: { cause?: unknown }) {
    super(key === undefined ? message : `${key}: ${message}`, options);
    this.name = 'StoreError';
    this.reason = reason;
    this.key = key;
  }
}

/**
 * The kind of a store client's error, read from its gRPC code and etcd's message.
 * @example storeErrorReason(err) === 'unreachable'
 */
export function storeErrorReason(err: unknown): StoreErrorReason {
  if (err instanceof StoreError) return err.reason;
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  if (/database space exceeded|NOSPACE/i.test(message)) return 'no_space';
  if (/request is too large|larger than max|too many operations/i.test(message)) return 'too_large';
  // etcd3's error classes keep Error's name; the gRPC status shows in the message ("4 DEADLINE_EXCEEDED: …").
  if (
    code === 14 ||
    code === 4 ||
    code === 1 ||
    /UNAVAILABLE|DEADLINE_EXCEEDED|CANCELLED|deadline exceeded|no leader|leader changed|request timed out|BrokenCircuit|circuit|ECONNREFUSED|No connection|no answer within|client was already closed/i.test(
      `${err instanceof Error ? err.constructor.name : ''} ${message}`,
    )
  ) {
    return 'unreachable';
  }
  return 'refused';
}

/**
 * The error as a StoreError naming `key`.
 * @example throw toStoreError(err, 'controller/state');
 */
export function toStoreError(err: unknown, key: string | undefined): StoreError {
  if (err instanceof StoreError) return err;
  const reason = storeErrorReason(err);
  const message = err instanceof Error ? err.message : String(err);
  const said =
    reason === 'no_space'
      ? `etcd is out of space (NOSPACE): compact, defragment and disarm the alarm, or raise --quota-backend-bytes (${message})`
      : message;
  return new StoreError(reason, key, said, { cause: err });
}
