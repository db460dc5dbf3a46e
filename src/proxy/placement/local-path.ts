/**
 * The D-only path of conditional disaggregation: the scheduler placed the request on D alone, its
 * capacity is reserved on D (reservation.ts), and no P is asked. What the decode loop receives is
 * what a P leg would have produced minus the KV hand-off: no `kv_transfer_params`, so the D leg's
 * body is the client's own and D prefills the prompt itself, as a single engine would.
 */
import type { PickedPair } from '../exchange/ports.ts';
import type { RequestReservation } from './reservation.ts';
import type { ExchangeDeps, Prefilled } from '../exchange/types.ts';

/**
 * Hands a locally-prefilled request straight to the decode loop.
 * @example if (pair.path === 'local') return skipPrefill(exchange, pair, reservation);
 */
export function skipPrefill(
  exchange: { readonly deps: Pick<ExchangeDeps, 'picker'> },
  pair: PickedPair,
  reservation: Pick<RequestReservation, 'transferring'>,
): Prefilled {
  exchange.deps.picker.recordPath?.('local');
  // The record moves on as after a P leg, so the ledger's phases stay the same on both paths.
  reservation.transferring();
  return { pair, kvTransferParams: undefined, answeredAt: performance.now() };
}
