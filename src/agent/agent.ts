/**
 * The instance agent as a core object: one device-runtime context per local device, the link
 * manager over the worker pool, the runtime event pump, the role driver and the KV transfers,
 * built together and closed in order. No HTTP: `apps/agent.ts` mounts the routes on it, and the
 * plugin API uses the same objects.
 */
import { optionErrors } from '../core/errors.ts';
import { Gauge, METRIC_PREFIX, type Registry } from '../core/metrics.ts';
import { LinkManager } from '../links/manager.ts';
import { EventPump } from '../workers/event-pump.ts';
import { PoolLinkExecutor } from '../workers/pool-executor.ts';
import { WorkerPool, type LinkThreads, type PoolAtomics } from '../workers/pool.ts';
import type { ContextSecurity, Encoding, RuntimeRole } from '../workers/protocol.ts';
import { openContexts, type ContextDevice } from './contexts.ts';
import { endpointAt } from './device-lookup.ts';
import type { IpPort } from '../links/endpoint.ts';
import { RoleController } from './role/driver.ts';
import type { RetryPolicy } from './role/retry.ts';
import { ServerAddresses } from './server-addresses.ts';
import type { ResourceReport } from './status.ts';
import { startTransfers, type TransferSettings } from './transfers/setup.ts';
import type { Transfers } from './transfers/transfers.ts';

/** A local device of the agent. */
export type AgentDevice = ContextDevice;

export interface AgentOptions {
  readonly devices: readonly AgentDevice[];
  /** Role carried in the runtime handshake (default `mix`). */
  readonly role?: RuntimeRole;
  readonly threads?: number;
  readonly atomics?: PoolAtomics;
  readonly encoding?: Encoding;
  /** Where link calls run (see WorkerPoolOptions.linkThreads). */
  readonly linkThreads?: LinkThreads;
  readonly batchWindowMs?: number;
  readonly maxBatch?: number;
  /** Registry for pdlink's metrics. */
  readonly metrics: Registry;
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

export interface Agent {
  readonly linkManager: LinkManager;
  /** KV block caches and pulls/pushes over links. */
  readonly transfers: Transfers;
  /** The role driver: role posts and the status. */
  readonly role: RoleController;
  readonly metrics: Registry;
  readonly devices: readonly AgentDevice[];
  /** Where link calls run, once the first one has come: the runtime's threads or worker threads. */
  readonly linkThreads: LinkThreads | undefined;
  /** The endpoint of the local device at `local` (see device-lookup.ts); undefined when none is there. */
  endpointFor(local: IpPort | undefined): string | undefined;
  /**
   * The embedding engine reports its free/total slots and KV blocks: the status then carries
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
 * @example const agent = await openAgent({ devices: [{ endpoint: '0', ip: '127.0.0.2', port: 26000, clusterId: 7n }], metrics });
 */
export async function openAgent(options: AgentOptions): Promise<Agent> {
  if (options.devices.length === 0) throw optionErrors.empty('devices', 'local device');
  const { metrics, workerFilename: filename } = options;
  const pool = new WorkerPool({
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    ...(options.atomics === undefined ? {} : { atomics: options.atomics }),
    ...(options.linkThreads === undefined ? {} : { linkThreads: options.linkThreads }),
    ...(filename === undefined ? {} : { filename }),
  });
  new Gauge({
    name: `${METRIC_PREFIX}link_threads`,
    help: "Where link calls run, 1 on the path in use once the first call has come: the runtime's call-queue threads (native) or worker threads (workers)",
    labelNames: ['path'],
    registers: [metrics],
    collect() {
      this.reset();
      const path = pool.linkThreads;
      if (path !== undefined) this.set({ path }, 1);
    },
  });
  // Event waits get a thread of their own so they never delay a link call.
  const eventPool = new WorkerPool({ threads: 1, ...(filename === undefined ? {} : { filename }) });
  const closePools = () => Promise.all([pool.close(), eventPool.close()]);
  const contexts = await openContexts(pool, options.devices, options.role ?? 'mix', options.security).catch(async (err: unknown) => {
    await closePools();
    throw err;
  });
  const kv = await startTransfers(contexts.handles, options.transfers, {
    registry: metrics,
    listPool: pool,
    ...(filename === undefined ? {} : { filename }),
  }).catch(async (err: unknown) => {
    await contexts.destroy();
    await closePools();
    throw err;
  });
  const linkManager = createLinkManager(options, pool, contexts.handles);
  const role = new RoleController({
    manager: linkManager,
    devices: options.devices,
    metrics,
    ...(options.linkBasePort === undefined ? {} : { linkBasePort: options.linkBasePort }),
    ...(options.roleLinkTimeoutMs === undefined ? {} : { linkTimeoutMs: options.roleLinkTimeoutMs }),
    ...(options.roleRetry === undefined ? {} : { retry: options.roleRetry }),
  });
  const addresses = new ServerAddresses(pool, contexts.handles, linkManager);
  const pump = new EventPump({
    pool: eventPool,
    endpoints: new Map([...contexts.handles].map(([endpoint, handle]) => [handle, endpoint])),
    onEvent: (endpoint, event) => {
      // An event older than the last call that settled its link tells nothing new to anyone.
      if (!linkManager.handleRuntimeEvent(endpoint, event)) return;
      role.handleRuntimeEvent(endpoint, event);
      if (event.kind === 'peer-linked') void addresses.note(endpoint);
    },
    ...(options.eventWaitMs === undefined ? {} : { waitMs: options.eventWaitMs }),
  });
  pump.start();

  let closing: Promise<void> | undefined;
  return {
    linkManager,
    transfers: kv.transfers,
    role,
    metrics,
    devices: options.devices,
    get linkThreads() {
      return pool.linkThreads;
    },
    endpointFor: (local) => endpointAt(options.devices, local),
    reportResources: (source) => role.reportResources(source),
    close() {
      closing ??= (async () => {
        // Order matters: no thread may still wait on a context when it is destroyed.
        await role.close();
        await pump.stop();
        await linkManager.idle();
        await kv.close();
        await contexts.destroy();
        await closePools();
      })();
      return closing;
    },
  };
}

function createLinkManager(options: AgentOptions, pool: WorkerPool, handles: ReadonlyMap<string, number>): LinkManager {
  const executor = new PoolLinkExecutor({ pool, handles, ...(options.encoding === undefined ? {} : { encoding: options.encoding }) });
  return new LinkManager({
    executor,
    endpoints: options.devices.map((d) => d.endpoint),
    registry: options.metrics,
    // Outgoing links leave from the device's own address, as a device's traffic would.
    localAddresses: new Map(options.devices.map((d) => [d.endpoint, { ip: d.ip, port: 0 }])),
    ...(options.batchWindowMs === undefined ? {} : { batchWindowMs: options.batchWindowMs }),
    ...(options.maxBatch === undefined ? {} : { maxBatch: options.maxBatch }),
    parallelCalls: pool.threads,
  });
}
