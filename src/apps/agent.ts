/**
 * The instance agent's core: one device-runtime context per local device (created in a worker,
 * its handle shared by every worker of the process), the link manager over the worker pool, the
 * runtime event pump, and the management routes. Shared by `pdlink instance` and the plugin API.
 */
import { Hono } from 'hono';
import { collectDefaultMetrics } from 'prom-client';
import { errors, optionErrors } from '../core/errors.ts';
import { onError } from '../http/envelope.ts';
import { notFoundOf } from '../http/methods.ts';
import { endpointAt } from '../agent/device-lookup.ts';
import { blockRoutes } from '../http/blocks.ts';
import { linkRoutes } from '../http/links.ts';
import { probeRoutes } from '../http/probes.ts';
import { roleRoutes } from '../http/role.ts';
import { LinkManager } from '../links/manager.ts';
import { createRegistry, type Registry } from '../core/metrics.ts';
import { EventPump } from '../workers/event-pump.ts';
import { startTransfers, type TransferSettings } from '../agent/transfers/setup.ts';
import type { Transfers } from '../agent/transfers/transfers.ts';
import { RoleController } from '../agent/role/driver.ts';
import type { RetryPolicy } from '../agent/role/retry.ts';
import type { ResourceReport } from '../agent/status.ts';
import { PoolLinkExecutor } from '../workers/pool-executor.ts';
import { WorkerPool, type PoolAtomics } from '../workers/pool.ts';
import type { ContextSecurity, Encoding, RuntimeLink } from '../workers/protocol.ts';

/** Role carried in the runtime handshake (pdrt.h PDRT_ROLE_*). */
export const RUNTIME_ROLE = { prompt: 0, decoder: 1, mix: 2 } as const;

export interface AgentDevice {
  /** Endpoint name in the link manager (the device's logical id as text). */
  readonly endpoint: string;
  readonly ip: string;
  /** Link listen port of this device's context. */
  readonly port: number;
  readonly clusterId: bigint;
}

export interface InstanceAgentOptions {
  readonly devices: readonly AgentDevice[];
  readonly role?: keyof typeof RUNTIME_ROLE;
  readonly threads?: number;
  readonly atomics?: PoolAtomics;
  readonly encoding?: Encoding;
  readonly batchWindowMs?: number;
  readonly maxBatch?: number;
  /** Registry for pdlink's metrics (default: a new one, never prom-client's global registry). */
  readonly metrics?: Registry;
  /** Also export process metrics (CPU, memory, event-loop lag); the CLI turns this on. */
  readonly processMetrics?: boolean;
  /** Worker module (default: the FFI-backed link worker); tests substitute a simulated runtime. */
  readonly workerFilename?: string | URL;
  /** Longest wait of one runtime event poll. */
  readonly eventWaitMs?: number;
  /** KV transfers: threads, same-host path, chunk size, slice. */
  readonly transfers?: TransferSettings;
  /** Link base port of the deployment: the role API derives peer endpoints from it (default 26000). */
  readonly linkBasePort?: number;
  /** Timeout of the role driver's link/unlink calls (default 3000 ms). */
  readonly roleLinkTimeoutMs?: number;
  /** Backoff of failed desired links (default 200 ms doubling to 5 s, jittered). */
  readonly roleRetry?: Partial<RetryPolicy>;
  /** Cluster secret and caps of every device's link port (default: no secret, runtime caps). */
  readonly security?: ContextSecurity;
}

export interface InstanceAgent {
  /** Management API: `/v1/links*`, probes, `/metrics`. Mount with `app.route(prefix, managementApp)`. */
  readonly managementApp: Hono;
  readonly linkManager: LinkManager;
  /** KV block caches and pulls/pushes over links (also served as `/v1/kv/*`). */
  readonly transfers: Transfers;
  /** The role driver behind `POST /v1/role/{role}` and `GET /v1/status`. */
  readonly role: RoleController;
  readonly metrics: Registry;
  readonly devices: readonly AgentDevice[];
  /**
   * The embedding engine reports its free/total slots and KV blocks: `GET /v1/status` then carries
   * MindIE's `resource` block, which the controller turns into the Coordinator's dynamic_info.
   * @example agent.reportResources(() => engine.resources());
   */
  reportResources(source: () => ResourceReport): void;
  /** Stops the event pump, waits for calls in flight, destroys the contexts, stops the workers; idempotent. */
  close(): Promise<void>;
}

/**
 * Opens the device contexts and builds the agent; rejects (with nothing left open) if a device
 * cannot listen.
 * @example const agent = await createInstanceAgent({ devices: [{ endpoint: '0', ip: '127.0.0.2', port: 26000, clusterId: 7n }] });
 */
export async function createInstanceAgent(options: InstanceAgentOptions): Promise<InstanceAgent> {
  if (options.devices.length === 0) throw new RangeError('devices must name at least one local device');
  const metrics = options.metrics ?? createRegistry();
  if (options.processMetrics === true) collectDefaultMetrics({ register: metrics, prefix: 'pdlink_process_' });
  const filename = options.workerFilename;
  const pool = new WorkerPool({
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    ...(options.atomics === undefined ? {} : { atomics: options.atomics }),
    ...(filename === undefined ? {} : { filename }),
  });
  // Event waits get a thread of their own so they never delay a link call.
  const eventPool = new WorkerPool({ threads: 1, ...(filename === undefined ? {} : { filename }) });
  const handles = new Map<string, number>();
  const destroyAll = async (): Promise<void> => {
    await Promise.all([...handles.values()].map((handle) => pool.run({ op: 'destroy', handle })));
    handles.clear();
  };
  try {
    for (const device of options.devices) {
      const reply = await pool.run<number>({
        op: 'create',
        clusterId: device.clusterId,
        role: RUNTIME_ROLE[options.role ?? 'mix'],
        listenIp: device.ip,
        listenPort: device.port,
        ...(options.security === undefined ? {} : { security: options.security }),
      });
      if (!reply.ok)
        throw errors.unavailable(`cannot open link endpoint ${device.endpoint} on ${device.ip}:${device.port}: ${reply.message}`);
      handles.set(device.endpoint, reply.value);
    }
  } catch (err) {
    await destroyAll();
    await Promise.all([pool.close(), eventPool.close()]);
    throw err;
  }
  const kv = await startTransfers(handles, options.transfers, {
    registry: metrics,
    listPool: pool,
    ...(filename === undefined ? {} : { filename }),
  }).catch(async (err: unknown) => {
    await destroyAll();
    await Promise.all([pool.close(), eventPool.close()]);
    throw err;
  });

  const executor = new PoolLinkExecutor({ pool, handles, ...(options.encoding === undefined ? {} : { encoding: options.encoding }) });
  const linkManager = new LinkManager({
    executor,
    endpoints: options.devices.map((d) => d.endpoint),
    registry: metrics,
    // Outgoing links leave from the device's own address, as a device's traffic would.
    localAddresses: new Map(options.devices.map((d) => [d.endpoint, { ip: d.ip, port: 0 }])),
    ...(options.batchWindowMs === undefined ? {} : { batchWindowMs: options.batchWindowMs }),
    ...(options.maxBatch === undefined ? {} : { maxBatch: options.maxBatch }),
  });
  const role = new RoleController({
    manager: linkManager,
    devices: options.devices,
    metrics,
    ...(options.linkBasePort === undefined ? {} : { linkBasePort: options.linkBasePort }),
    ...(options.roleLinkTimeoutMs === undefined ? {} : { linkTimeoutMs: options.roleLinkTimeoutMs }),
    ...(options.roleRetry === undefined ? {} : { retry: options.roleRetry }),
  });
  const pump = new EventPump({
    pool: eventPool,
    endpoints: new Map([...handles].map(([endpoint, handle]) => [handle, endpoint])),
    onEvent: (endpoint, event) => {
      // An event older than the last call that settled its link tells nothing new to anyone.
      if (!linkManager.handleRuntimeEvent(endpoint, event)) return;
      role.handleRuntimeEvent(endpoint, event);
      if (event.kind === 'peer-linked') void noteServerAddresses(endpoint);
    },
    ...(options.eventWaitMs === undefined ? {} : { waitMs: options.eventWaitMs }),
  });
  // Link events carry no address; the runtime's link list has the peer's. One lookup per endpoint
  // at a time, rerun once if more clients linked meanwhile, so a burst of links costs a few lists.
  const lookups = new Map<string, 'running' | 'again'>();
  const listServerAddresses = async (endpoint: string): Promise<void> => {
    const handle = handles.get(endpoint);
    if (handle === undefined) return;
    const reply = await pool.run<RuntimeLink[]>({ op: 'list', handle });
    if (!reply.ok) return;
    for (const link of reply.value) {
      if (link.side === 1 && link.remoteIp !== '')
        linkManager.noteRemote(endpoint, link.remoteClusterId, { ip: link.remoteIp, port: link.remotePort });
    }
  };
  const noteServerAddresses = async (endpoint: string): Promise<void> => {
    if (lookups.has(endpoint)) {
      lookups.set(endpoint, 'again');
      return;
    }
    do {
      lookups.set(endpoint, 'running');
      await listServerAddresses(endpoint);
    } while (lookups.get(endpoint) === 'again');
    lookups.delete(endpoint);
  };
  pump.start();

  const managementApp = new Hono();
  managementApp.onError(onError);
  managementApp.notFound(notFoundOf(managementApp));
  managementApp.route('/', linkRoutes({ manager: linkManager, endpointFor: (local) => endpointAt(options.devices, local) }));
  managementApp.route('/', roleRoutes({ controller: role }));
  managementApp.route('/', blockRoutes({ transfers: kv.transfers, endpointFor: (local) => endpointAt(options.devices, local) }));
  managementApp.route('/', probeRoutes({ notReadyReason: () => undefined, metrics }));

  let closing: Promise<void> | undefined;
  return {
    managementApp,
    linkManager,
    transfers: kv.transfers,
    role,
    metrics,
    devices: options.devices,
    reportResources: (source) => role.reportResources(source),
    close() {
      closing ??= (async () => {
        // Order matters: no thread may still wait on a context when it is destroyed.
        await role.close();
        await pump.stop();
        await linkManager.idle();
        await kv.close();
        await destroyAll();
        await Promise.all([pool.close(), eventPool.close()]);
      })();
      return closing;
    },
  };
}
