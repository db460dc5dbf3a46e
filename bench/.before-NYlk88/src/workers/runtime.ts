/**
 * The DeviceRuntime of the pool's workers, over the src/ffi facade. A call the runtime refuses
 * as a whole comes back as its code (the task gives it to every cluster), not as an exception:
 * only a worker that cannot reach the runtime at all fails its task.
 */
import * as ffi from '../ffi/index.ts';
import { LlmStatusError } from '../core/llm-status.ts';
import { ffiBlockRuntime } from './block-runtime.ts';
import type { DeviceRuntime } from './device-runtime.ts';
import type { WorkerCluster } from './protocol.ts';

function toSpecs(clusters: readonly WorkerCluster[]): ffi.ClusterSpec[] {
  return clusters.map((c) => ({ remoteClusterId: c.id, remoteIp: c.ip, remotePort: c.port, localIp: c.localIp, localPort: c.localPort }));
}

/** Runs a runtime call, turning a whole-call refusal into its status code. */
function statusOf<T>(call: () => T, refused: (code: number) => T): T {
  try {
    return call();
  } catch (err) {
    if (err instanceof LlmStatusError) return refused(err.code);
    throw err;
  }
}

export const ffiRuntime: DeviceRuntime = {
  create(clusterId, role, listenIp, listenPort, security = {}) {
    return ffi.create({ clusterId, role, ...(listenIp === null ? {} : { listenIp, listenPort }), ...security });
  },
  destroy(handle) {
    ffi.destroy(handle);
  },
  link(handle, clusters, timeoutMs) {
    return statusOf(
      () => {
        const { ret, rets } = ffi.link(handle, toSpecs(clusters), timeoutMs);
        return { rc: ret, rets };
      },
      (rc) => ({ rc, rets: [] }),
    );
  },
  unlink(handle, clusters, timeoutMs, force) {
    return statusOf(
      () => {
        const { ret, rets } = ffi.unlink(handle, toSpecs(clusters), timeoutMs, force);
        return { rc: ret, rets };
      },
      (rc) => ({ rc, rets: [] }),
    );
  },
  linkRecords(handle, records, n, timeoutMs, rets) {
    return statusOf(
      () => ffi.linkRecords(handle, records, n, timeoutMs, rets),
      (rc) => rc,
    );
  },
  unlinkRecords(handle, records, n, timeoutMs, force, rets) {
    return statusOf(
      () => ffi.unlinkRecords(handle, records, n, timeoutMs, force, rets),
      (rc) => rc,
    );
  },
  waitEvents: (handle, timeoutMs) => ffi.waitEvents(handle, timeoutMs),
  pollEvents: (handle, cap) => ffi.pollEvents(handle, cap),
  listLinks: (handle) => ffi.listLinks(handle),
  blocks: ffiBlockRuntime,
};
