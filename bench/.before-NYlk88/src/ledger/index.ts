/**
 * The KV ledger's public surface, for the Coordinator, the scheduler, the proxy and embedding gateways.
 */
export { KvLedger } from './ledger.ts';
export type { InstanceLoad } from './accounts.ts';
export { ManualClock, systemClock, type LeaseClock } from '../core/lease-clock.ts';
export {
  ACTIVE_STATES,
  FINAL_STATES,
  INSTANCE_REMOVED,
  LEASE_EXPIRED,
  RELEASE_REASONS,
  type ActiveState,
  type FinalState,
  type ReleaseReason,
  type TransferPhase,
  type TransferRecord,
  type TransferState,
} from './records.ts';
export {
  DEFAULT_LEASE_MS,
  DEFAULT_RECENT_CAPACITY,
  type CompleteReport,
  type LedgerEvent,
  type LedgerOptions,
  type LedgerSnapshot,
  type LedgerTotals,
  type ReserveRequest,
} from './types.ts';
