/**
 * The device runtime as the worker tasks use it. `runtime.ts` implements it over the FFI facade;
 * tests of the pool mechanics implement it in plain TypeScript.
 */
import type { BlockRuntime } from './block-runtime.ts';
import type { PdrtEvent, RuntimeLinkInfo } from '../ffi/layout.ts';
import type { ContextSecurity, RuntimeRole, WorkerCluster } from './protocol.ts';

export interface DeviceRuntime {
  /** Creates a context; returns its handle (the pointer value). Throws on a non-zero status. */
  create(clusterId: bigint, role: RuntimeRole, listenIp: string | null, listenPort: number, security?: ContextSecurity): number;
  destroy(handle: number): void;
  /** pdrt_link: the call's status and one code per cluster. */
  link(handle: number, clusters: readonly WorkerCluster[], timeoutMs: number): { rc: number; rets: ArrayLike<number> };
  unlink(handle: number, clusters: readonly WorkerCluster[], timeoutMs: number, force: boolean): { rc: number; rets: ArrayLike<number> };
  /**
   * pdrt_link on pdrt_cluster records as they are (the shared encoding's zero-copy path); codes go
   * into `rets`. Optional: without it the records are decoded and passed to `link`.
   */
  linkRecords?(handle: number, records: Uint8Array, n: number, timeoutMs: number, rets: Int32Array): number;
  unlinkRecords?(handle: number, records: Uint8Array, n: number, timeoutMs: number, force: boolean, rets: Int32Array): number;
  /** True when an event is queued, false after `timeoutMs` without one. */
  waitEvents(handle: number, timeoutMs: number): boolean;
  pollEvents(handle: number, cap: number): PdrtEvent[];
  listLinks(handle: number): RuntimeLinkInfo[];
  /** KV block caches and transfers; a runtime without them fails block tasks. */
  readonly blocks?: BlockRuntime;
}
