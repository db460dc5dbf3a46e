/**
 * The PD scheduler's public surface, for the Coordinator, the proxy and embedding gateways.
 */
export {
  CIRCUIT_STATE_CODE,
  CircuitBreakers,
  createBreakers,
  createHealth,
  type BreakerOptions,
  type CircuitEvent,
  type CircuitState,
  type HealthOptions,
} from './breakers.ts';
export { ledgerLoads } from './ledger-loads.ts';
export { capacityOf, NO_RESERVATIONS, type Capacity, type LoadSource, type ReservedCapacity } from './loads.ts';
export { DEFAULT_BLOCK_SIZE } from './prefix-hash.ts';
export type { PrefixIndexOptions } from './prefix-index.ts';
export { createScheduler, PdScheduler, type SchedulerOptions } from './scheduler.ts';
export {
  policyDefinition,
  policyFor,
  policyNames,
  registerPolicy,
  type Policy,
  type PolicyBuild,
  type PolicyContext,
  type PolicyDefinition,
  type PolicyNeed,
  type PolicyRole,
} from './policies/index.ts';
export type { KvHits } from './kv-hits.ts';
export type { SchedulerNode } from './node.ts';
export type { Pool } from './pool.ts';
export type { TopologyCounts } from './topology.ts';
export {
  DEFAULT_POLICY,
  DEFAULT_PREFILL_POLICY,
  PICK_FAILURES,
  type Pair,
  type PickFailure,
  type PickFailureReason,
  type PickReason,
  type PickRequest,
  type PickResult,
  type PolicyChoice,
  type PolicyName,
} from './types.ts';
