/**
 * The D side of an exchange: D gets the client's request with P's `kv_transfer_params`, and its
 * answer goes back to the client (the leg is decode-leg.ts, the answer decode-answer.ts). A leg
 * that never reached its D (the connection was refused) goes to another D of the same P while the
 * ledger proves P still holds the blocks (see decode-retry.ts); this loop decides whether one may.
 */
import type { Instance } from '../../cluster/instance.ts';
import { decodeLeg } from './decode-leg.ts';
import { nextDecode } from './decode-retry.ts';
import type { DecodeExchange, Prefilled } from '../exchange/types.ts';

/**
 * Runs the D leg of `exchange`, on another D of the same P when one never got it,
 * and returns the client's response; failures end the exchange and throw its Stop. `moveDecode`
 * moves the request's reservation to the D that takes over.
 * @example return await runDecode(exchange, prefilled, (d) => reservation.moveDecode(d, exchange.prompt.tokenCount));
 */
export async function runDecode(exchange: DecodeExchange, prefilled: Prefilled, moveDecode: (d: Instance) => void): Promise<Response> {
  const failedD = new Set<number>();
  let pair = prefilled.pair;
  for (;;) {
    const outcome = await decodeLeg(exchange, prefilled, pair);
    if (outcome instanceof Response) return outcome;
    failedD.add(pair.d.id);
    const next =
      failedD.size <= exchange.deps.settings.maxRetries && exchange.cause === null
        ? nextDecode(exchange.deps.picker, pair, failedD, exchange.prompt, moveDecode)
        : undefined;
    if (next === undefined) throw outcome.stop();
    exchange.deps.metrics.decodeRetried(outcome.reason);
    pair = next;
  }
}
