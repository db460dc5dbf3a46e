/**
 * pdlink as a library: what a Bun-based inference gateway mounts.
 *
 * @example
 * import { Hono } from 'hono';
 * import { createPdlink } from 'pdlink';
 * const pdlink = createPdlink();
 * const gateway = new Hono();
 * gateway.route('/pd', pdlink.managementApp);   // POST /pd/v1/instances/refresh, GET /pd/v1/instances, ...
 * gateway.route('/', pdlink.inferenceApp);      // the OpenAI-compatible PD proxy
 * // on shutdown: await pdlink.close();
 */
import { createCoordinator, type Coordinator, type CoordinatorOptions } from './coordinator.ts';

export type PdlinkOptions = CoordinatorOptions;
export type Pdlink = Coordinator;

/**
 * Creates a Coordinator with its management and inference Hono apps and its core objects.
 * @example const { managementApp, registry, close } = createPdlink({ bodyLimitBytes: 8 << 20 });
 */
export function createPdlink(options: PdlinkOptions = {}): Pdlink {
  return createCoordinator(options);
}

export { createCoordinator } from './coordinator.ts';
export type { Coordinator, CoordinatorOptions } from './coordinator.ts';
export type { Instance, InstanceRole, RegistryDiff, ClusterView } from './cluster/instance.ts';
export { ClusterRegistry } from './cluster/registry.ts';
export { KvLedger } from './ledger/index.ts';
export type { TransferRecord, TransferState, LedgerSnapshot, ReserveRequest, InstanceLoad } from './ledger/index.ts';
export { createInstanceAgent } from './instance/agent.ts';
export type { InstanceAgent, InstanceAgentOptions, AgentDevice } from './instance/agent.ts';
export { LinkManager } from './links/manager.ts';
export type { Transfers } from './instance/transfers.ts';
export type { TransferResult, CallStatus } from './instance/transfer-types.ts';
export { RoleController } from './instance/role.ts';
export type { StatusBody, RoleStatusName } from './instance/status.ts';
export { createScheduler, createHealth } from './scheduler/index.ts';
export type { PdScheduler, CircuitBreakers, PolicyChoice, PolicyName, PickRequest, PickResult } from './scheduler/index.ts';
export { PdlinkError, errors } from './errors.ts';
export type { ErrorCode, FieldIssue } from './errors.ts';
export { LLM_STATUS, statusName, LlmStatusError } from './links/status.ts';
export type { StatusName, StatusCode } from './links/status.ts';
