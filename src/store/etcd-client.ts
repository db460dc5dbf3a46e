/**
 * How pdlink's etcd client talks to a cluster of members, so that one member down of three goes
 * unnoticed: every unary call has a short deadline per attempt and is tried again on another member
 * when the one it reached could not answer (down, no leader, hung); a member that failed is skipped
 * for a second (a per-member circuit breaker) so the calls after it go straight to a live one; watch
 * streams reconnect within a second. Errors that come from a store that answered (out of space, too
 * large, a lapsed lease) are never retried: they would fail the same way everywhere.
 */
import { Etcd3, type IOptions } from 'etcd3';
import { circuitBreaker, ConsecutiveBreaker, ConstantBackoff, ExponentialBackoff, handleWhen, noop, retry } from 'cockatiel';
import { storeErrorReason } from './store-error.ts';

/** Deadline of one attempt of a unary call: far above a round trip, well below a lease TTL. */
export const ATTEMPT_DEADLINE_MS = 1000;
/** A member that failed a call is skipped this long. */
const MEMBER_PAUSE_MS = 1000;
/** grpc-js's default (4 MiB) would refuse a large cluster's stored state read in one range. */
const MAX_RECEIVE_BYTES = 256 * 1024 * 1024;

const unreachable = (err: Error): boolean => storeErrorReason(err) === 'unreachable';

/**
 * An etcd3 client over `endpoints` with pdlink's deadlines, member failover and reconnection.
 * @example const client = createEtcdClient(['http://10.0.0.1:2379', 'http://10.0.0.2:2379'], 1000);
 */
export function createEtcdClient(endpoints: readonly string[], attemptDeadlineMs = ATTEMPT_DEADLINE_MS): Etcd3 {
  const members = endpoints.length;
  const config: IOptions = {
    hosts: [...endpoints],
    dialTimeout: attemptDeadlineMs,
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + attemptDeadlineMs }),
    faultHandling: {
      // With one member there is nowhere else to go: a breaker would only refuse calls after it is back.
      host: () =>
        members > 1
          ? circuitBreaker(handleWhen(unreachable), { halfOpenAfter: MEMBER_PAUSE_MS, breaker: new ConsecutiveBreaker(1) })
          : noop,
      global: members > 1 ? retry(handleWhen(unreachable), { maxAttempts: members, backoff: new ConstantBackoff(0) }) : noop,
      // The watch manager asks this for its first delay with next() (a factory, whatever its type says).
      watchBackoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 1000 }) as unknown as NonNullable<
        NonNullable<IOptions['faultHandling']>['watchBackoff']
      >,
    },
    grpcOptions: {
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 1000,
      'grpc.min_reconnect_backoff_ms': 100,
      'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
      // A member that hangs (stopped, cut off) holds a watch stream open forever without pings;
      // etcd refuses pings more often than every 5 s (--grpc-keepalive-min-time).
      'grpc.keepalive_time_ms': 5000,
      'grpc.keepalive_timeout_ms': 2000,
    } as NonNullable<IOptions['grpcOptions']>,
  };
  return new Etcd3(config);
}

/**
 * The end of the key range that holds every key starting with `prefix` (etcd's range_end).
 * @example rangeEnd(Buffer.from('/pdlink/a/')) // '/pdlink/a0'
 */
export function rangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/**
 * Rejects with "no answer within" (an unreachable store) when `promise` has not settled in `ms`.
 * @example await withDeadline(stream, 1000, 'lease keep-alive');
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
