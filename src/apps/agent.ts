/**
 * The instance agent's composition root: builds the agent core (agent/agent.ts) and mounts the
 * management routes on it (`/v1/links*`, `/v1/role/*`, `/v1/status`, `/v1/kv/*`, probes,
 * `/metrics`). Shared by `pdlink instance` and the plugin API.
 */
import { Hono } from 'hono';
import { collectProcessMetrics } from '../core/process-metrics.ts';
import { openAgent, type Agent, type AgentOptions } from '../agent/agent.ts';
import { createRegistry, type Registry } from '../core/metrics.ts';
import { blockRoutes } from '../http/blocks.ts';
import { onError } from '../http/envelope.ts';
import { managementAuth } from '../http/auth.ts';
import type { InstanceAddressPolicy } from '../net/address-policy.ts';
import { linkRoutes } from '../http/links.ts';
import { notFoundOf } from '../http/methods.ts';
import { probeRoutes } from '../http/probes.ts';
import { roleRoutes } from '../http/role.ts';

export type { AgentDevice } from '../agent/agent.ts';

export interface InstanceAgentOptions extends Omit<AgentOptions, 'metrics'> {
  /** Registry for pdlink's metrics (default: a new one, never prom-client's global registry). */
  readonly metrics?: Registry;
  /** Also export process metrics (CPU, memory, event-loop lag); the CLI turns this on. */
  readonly processMetrics?: boolean;
  /** Bearer token every management route but the probes requires (default: none, open). */
  readonly managementToken?: string;
  /** Peer addresses role posts and link calls may name (default: any but the ones always refused). */
  readonly addressPolicy?: InstanceAddressPolicy;
}

export interface InstanceAgent extends Agent {
  /** Management API: `/v1/links*`, `/v1/role/*`, `/v1/status`, `/v1/kv/*`, probes, `/metrics`. Mount with `app.route(prefix, managementApp)`. */
  readonly managementApp: Hono;
}

/**
 * Opens the device contexts, builds the agent and its management routes; rejects (with nothing
 * left open) if a device cannot listen.
 * @example const agent = await createInstanceAgent({ devices: [{ endpoint: '0', ip: '127.0.0.2', port: 26000, clusterId: 7n }] });
 */
export async function createInstanceAgent(options: InstanceAgentOptions): Promise<InstanceAgent> {
  const metrics = options.metrics ?? createRegistry();
  const agent = await openAgent({ ...options, metrics });
  if (options.processMetrics === true) collectProcessMetrics(metrics, 'pdlink_process_');
  const managementApp = new Hono();
  managementApp.onError(onError);
  managementApp.notFound(notFoundOf(managementApp));
  managementApp.use('*', managementAuth(options.managementToken));
  const policy = options.addressPolicy === undefined ? {} : { addressPolicy: options.addressPolicy };
  managementApp.route('/', linkRoutes({ manager: agent.linkManager, endpointFor: agent.endpointFor, ...policy }));
  managementApp.route('/', roleRoutes({ controller: agent.role, ...policy }));
  managementApp.route('/', blockRoutes({ transfers: agent.transfers, endpointFor: agent.endpointFor }));
  managementApp.route('/', probeRoutes({ notReadyReason: () => undefined, metrics }));
  return Object.assign(agent, { managementApp });
}
