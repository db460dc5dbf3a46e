/**
 * The KV ledger as the scheduler's load source. Reservations change only when a record is created,
 * ends or moves its decode side, so only those events reach the scheduler; phase changes in
 * between hold capacity steady.
 */
import type { KvLedger } from '../ledger/index.ts';
import type { LoadSource } from './loads.ts';

/**
 * Adapts a ledger to the scheduler's `LoadSource`.
 * @example createScheduler({ cluster: registry, loads: ledgerLoads(ledger), ... })
 */
export function ledgerLoads(ledger: Pick<KvLedger, 'reservedOn' | 'onRecord'>): LoadSource {
  return {
    // The account itself, read in place: a refresh reads thousands, one object each would be garbage.
    load: (id) => ledger.reservedOn(id),
    onLoadChange(listener) {
      return ledger.onRecord(({ record, from, movedFrom }) => {
        if (movedFrom !== undefined) listener(movedFrom);
        const changedCapacity = from === null || record.endedAt !== null || movedFrom !== undefined;
        if (!changedCapacity) return;
        listener(record.p);
        if (record.d !== record.p) listener(record.d);
      });
    },
  };
}
