/**
 * The agent's device-runtime contexts: one per local device, created in a worker (the handle is
 * shared by every worker of the process) and destroyed together. Opening is all or nothing, so a
 * device that cannot listen leaves no context behind.
 */
import { errors } from '../core/errors.ts';
import type { WorkerPool } from '../workers/pool.ts';
import type { ContextSecurity, RuntimeRole } from '../workers/protocol.ts';

/** A local device as its context needs it. */
export interface ContextDevice {
  /** Endpoint name in the link manager (the device's logical id as text). */
  readonly endpoint: string;
  readonly ip: string;
  /** Link listen port of this device's context. */
  readonly port: number;
  readonly clusterId: bigint;
}

export interface DeviceContexts {
  /** Runtime context handle of each endpoint, in device order (the first is the default endpoint). */
  readonly handles: ReadonlyMap<string, number>;
  /** Destroys every context; call only when no thread can still be waiting on one. */
  destroy(): Promise<void>;
}

/**
 * Opens a context per device; rejects (with nothing left open) if one cannot listen.
 * @example const contexts = await openContexts(pool, devices, 'mix', undefined);
 */
export async function openContexts(
  pool: WorkerPool,
  devices: readonly ContextDevice[],
  role: RuntimeRole,
  security: ContextSecurity | undefined,
): Promise<DeviceContexts> {
  const handles = new Map<string, number>();
  const destroy = async (): Promise<void> => {
    await Promise.all([...handles.values()].map((handle) => pool.run({ op: 'destroy', handle })));
    handles.clear();
  };
  try {
    for (const device of devices) {
      const reply = await pool.run<number>({
        op: 'create',
        clusterId: device.clusterId,
        role,
        listenIp: device.ip,
        listenPort: device.port,
        ...(security === undefined ? {} : { security }),
      });
      if (!reply.ok)
        throw errors.unavailable(`cannot open link endpoint ${device.endpoint} on ${device.ip}:${device.port}: ${reply.message}`);
      handles.set(device.endpoint, reply.value);
    }
  } catch (err) {
    await destroy();
    throw err;
  }
  return { handles, destroy };
}
