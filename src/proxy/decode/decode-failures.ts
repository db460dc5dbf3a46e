/**
 * How a D leg fails, in one place for the leg and its answers: every failure reports D to the circuit
 * breakers (unless the exchange was aborted, which is nobody's fault but its cause) and ends the
 * exchange with a 502 naming D; a leg that never reached D may instead be handed to another D.
 */
import { errors } from '../../core/errors.ts';
import type { Stop } from '../exchange/stop.ts';
import type { DecodeExchange } from '../exchange/types.ts';
import { transportMessage } from '../legs/upstream.ts';

/** A D leg that provably never reached D, P's blocks untouched: another D may take it. */
export interface Retryable {
  readonly reason: 'refused';
  /** Ends the exchange with this failure, when no other D takes the leg. */
  readonly stop: () => Stop;
}

/** The ways one D leg ends in failure; each returns the exchange's Stop for the caller to throw. */
export interface DecodeFailures {
  /** A Stop-maker for a failure already reported: ends the exchange with `decode instance <d> <message>`. */
  failWith(message: string): () => Stop;
  /** The connection broke while `what`: the abort's answer when the exchange was aborted, else D's fault. */
  broken(err: unknown, what: string): Stop;
  /** D answered something unusable: reported, and the exchange ends. */
  refused(message: string): Stop;
}

/**
 * The failures of the D leg to instance `d` of `exchange`.
 * @example throw decodeFailures(exchange, 21).refused('answered 200 with an empty body');
 */
export function decodeFailures(exchange: DecodeExchange, d: number): DecodeFailures {
  const { breakers } = exchange.deps;
  const failWith = (message: string) => (): Stop => {
    const failure = errors.upstreamFailed(`decode instance ${d} ${message}`);
    return exchange.fail('upstream_failed', failure, { kind: 'fail', code: 'decode_failed', detail: failure.message });
  };
  return {
    failWith,
    broken(err, what) {
      if (exchange.cause !== null) return exchange.stopForAbort(d);
      breakers?.recordFailure(d);
      return failWith(`${what}: ${transportMessage(err)}`)();
    },
    refused(message) {
      breakers?.recordFailure(d);
      return failWith(message)();
    },
  };
}
