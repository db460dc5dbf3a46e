import { describe, expect, test } from 'bun:test';
import { StoreError, storeErrorReason, toStoreError } from './store-error.ts';

/** An error as etcd3 hands it over: its own class, Error's name, the gRPC status in the message. */
class GRPCDeadlineExceededError extends Error {}

describe('store error reasons', () => {
  test.each([
    ['4 DEADLINE_EXCEEDED: context deadline exceeded', 'unreachable'],
    ['14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:2379', 'unreachable'],
    ['14 UNAVAILABLE: etcdserver: no leader', 'unreachable'],
    ['etcdserver: request timed out', 'unreachable'],
    ['lease keep-alive: no answer within 1000 ms', 'unreachable'],
    ['Breaker is open', 'refused'],
    ['8 RESOURCE_EXHAUSTED: etcdserver: mvcc: database space exceeded', 'no_space'],
    ['3 INVALID_ARGUMENT: etcdserver: request is too large', 'too_large'],
    ['8 RESOURCE_EXHAUSTED: Received message larger than max (4351780 vs. 4194304)', 'too_large'],
    ['3 INVALID_ARGUMENT: etcdserver: too many operations in txn request', 'too_large'],
    ['5 NOT_FOUND: etcdserver: requested lease not found', 'refused'],
  ] as const)('%s → %s', (message, reason) => {
    expect(storeErrorReason(new GRPCDeadlineExceededError(message))).toBe(reason);
  });

  test('a broken circuit (every member skipped) is unreachable, by its class', () => {
    class BrokenCircuitError extends Error {}
    expect(storeErrorReason(new BrokenCircuitError('Execution prevented because the circuit breaker is open'))).toBe('unreachable');
  });

  test('a StoreError names its key first; out of space says what to do', () => {
    const error = toStoreError(new Error('etcdserver: mvcc: database space exceeded'), 'controller/state/manifest');
    expect(error).toBeInstanceOf(StoreError);
    expect(error.reason).toBe('no_space');
    expect(error.key).toBe('controller/state/manifest');
    expect(error.message).toStartWith(
      'controller/state/manifest: etcd is out of space (NOSPACE): compact, defragment and disarm the alarm',
    );
    expect(toStoreError(error, 'other')).toBe(error);
  });
});
