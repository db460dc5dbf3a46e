/**
 * pdlink as a library: what a Bun- or Deno-based inference gateway mounts (on Deno, serve the
 * gateway with `Deno.serve(gateway.fetch)` instead of `Bun.serve`).
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
import { createCoordinator, type Coordinator, type CoordinatorOptions } from './apps/coordinator.ts';

export type PdlinkOptions = CoordinatorOptions;
export type Pdlink = Coordinator;

/**
 * Creates a Coordinator with its management and inference Hono apps and its core objects.
 * @example const { managementApp, registry, close } = createPdlink({ bodyLimitBytes: 8 << 20 });
 */
export function createPdlink(options: PdlinkOptions = {}): Pdlink {
  return createCoordinator(options);
}

export { createCoordinator } from './apps/coordinator.ts';
export type { Coordinator, CoordinatorOptions } from './apps/coordinator.ts';
export type { Instance, InstanceRole, RegistryDiff, ClusterView } from './cluster/instance.ts';
export { ClusterRegistry } from './cluster/registry.ts';
export { KvLedger } from './ledger/index.ts';
export type { TransferRecord, TransferState, LedgerSnapshot, ReserveRequest, InstanceLoad } from './ledger/index.ts';
export { createInstanceAgent } from './apps/agent.ts';
export type { InstanceAgent, InstanceAgentOptions, AgentDevice } from './apps/agent.ts';
export { createControllerApp } from './apps/controller.ts';
export type { ControllerApp, ControllerAppOptions } from './apps/controller.ts';
export type { ApplyOutcome, TopologyChange } from './controller/topology-change.ts';
export type { TopologyFileStatus } from './controller/topology-file.ts';
export { LinkManager } from './links/manager.ts';
export type { Transfers } from './agent/transfers/transfers.ts';
export type { TransferResult, CallStatus } from './agent/transfers/types.ts';
export { RoleController } from './agent/role/driver.ts';
export type { StatusBody, RoleStatusName } from './agent/status.ts';
export { createScheduler, createBreakers, createHealth, policyNames, registerPolicy } from './scheduler/index.ts';
export type { PdScheduler, CircuitBreakers, PolicyChoice, PolicyName, PickRequest, PickResult } from './scheduler/index.ts';
export type { Policy, PolicyBuild, PolicyContext, PolicyDefinition, PolicyNeed, PolicyRole } from './scheduler/index.ts';
export type { KvHits, Pool, SchedulerNode } from './scheduler/index.ts';
export { PdlinkError, errors } from './core/errors.ts';
export type { ErrorCode, FieldIssue } from './core/errors.ts';
export { LLM_STATUS, statusName, LlmStatusError } from './core/llm-status.ts';
export type { StatusName, StatusCode } from './core/llm-status.ts';
