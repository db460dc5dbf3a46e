/**
 * The device runtime facade, as src/workers imports it: contexts and links (runtime.ts), block
 * caches and transfers (blocks.ts), the runtime's call queue (calls.ts), C layouts and constants
 * (layout.ts), library loading.
 */
export {
  abiVersion,
  asPointer,
  create,
  destroy,
  link,
  linkRecords,
  listenPort,
  listLinks,
  pollEvents,
  setOption,
  unlink,
  unlinkRecords,
  waitEvents,
} from './runtime.ts';
export type { BatchResult, CreateOptions, RuntimeHandle } from './runtime.ts';
export { pullBlocks, pushBlocks, readBlocks, registerBlocks, unregisterBlocks, writeBlocks } from './blocks.ts';
export type { BlockList, TransferSpec } from './blocks.ts';
export { CLUSTER_BYTES, EVENT_KIND, LINK_STATE, MAX_CLUSTERS_PER_CALL, OPTION, ROLE, SIDE } from './layout.ts';
export type { ClusterSpec, PdrtEvent, RoleName, RuntimeLinkInfo } from './layout.ts';
export { DEFAULT_RUNTIME_PATH, PDRT_ABI_VERSION, loadCallQueue, loadRuntime, runtimeLibraryPath } from './library.ts';
export { CALL_BYTES, CALLS_MAX_THREADS, CallQueue } from './calls.ts';
export type { CallSpec } from './calls.ts';
export { check } from './check.ts';
export { CONFIG_BYTES, SECRET_MAX, SECRET_MIN, packConfig } from './config.ts';
export type { LinkPortLimits } from './config.ts';
