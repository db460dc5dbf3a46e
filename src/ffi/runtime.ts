/**
 * Typed facade over a device runtime context: lifecycle, links, events. A context is a handle
 * (the pdrt_ctx pointer as a number) valid in every thread of the process, so worker threads can
 * share one. Calls block until the runtime returns (each by its own deadline): run them in workers.
 * Buffers are module-level and reused, so the link path allocates only its result.
 */
import { INT32_MAX } from '../core/limits.ts';
import { isIP } from 'node:net';
import { LLM_STATUS, LlmStatusError } from '../core/llm-status.ts';
import { check, invalid } from './check.ts';
import { CONFIG_BYTES, packConfig, type LinkPortLimits } from './config.ts';
import {
  CLUSTER_BYTES,
  EVENT_BYTES,
  IP_MAX,
  LINK_INFO_BYTES,
  MAX_CLUSTERS_PER_CALL,
  OPTION,
  ROLE,
  checkInt,
  checkU64,
  decodeEvent,
  decodeLinkInfo,
  packClusters,
  writeIp,
  type ClusterSpec,
  type RoleName,
  type PdrtEvent,
  type RuntimeLinkInfo,
} from './layout.ts';
import { runtimeSymbols } from './library.ts';

/** The pdrt_ctx pointer value of a context. */
export type RuntimeHandle = number;

export interface CreateOptions {
  readonly clusterId: bigint;
  readonly role: RoleName;
  /** Listen address (server side). With listenPort 0 or absent: an ephemeral port, see `listenPort()`. */
  readonly listenIp?: string;
  /** 1..65535 (needs listenIp); 0 or absent: ephemeral when listenIp is set, else client only. */
  readonly listenPort?: number;
  /** The cluster secret: links to and from this context must prove it (SECRET_MIN..SECRET_MAX bytes). */
  readonly linkSecret?: Uint8Array;
  /** Caps of the link port; absent fields take the runtime's defaults. */
  readonly linkPort?: LinkPortLimits;
}

/** `(ret, rets)` of link_clusters / unlink_clusters: ret is LLM_SUCCESS or LLM_FAILED. */
export interface BatchResult {
  readonly ret: number;
  readonly rets: number[];
}

const EVENT_CHUNK = 64;

const records = new Uint8Array(MAX_CLUSTERS_PER_CALL * CLUSTER_BYTES);
const recordsView = new DataView(records.buffer);
const retsOut = new Int32Array(MAX_CLUSTERS_PER_CALL);
const ctxOut = new BigUint64Array(1);
const portOut = new Uint16Array(1);
const countOut = new Uint32Array(1);
const totalOut = new Uint32Array(1);
const ipText = new Uint8Array(IP_MAX);
const config = new Uint8Array(CONFIG_BYTES);
const events = new Uint8Array(EVENT_CHUNK * EVENT_BYTES);
const eventsView = new DataView(events.buffer);
let linkInfos = new Uint8Array(16 * LINK_INFO_BYTES);
let linkInfosView = new DataView(linkInfos.buffer);

/**
 * The handle, checked, as the `ctx` argument of the symbol table (each binding passes it on as a pointer).
 * @example symbols.pdrt_destroy(asPointer(handle))
 */
export function asPointer(handle: RuntimeHandle): RuntimeHandle {
  if (!Number.isSafeInteger(handle) || handle <= 0) throw invalid('handle', 'is not a runtime handle');
  return handle;
}

/**
 * PDRT_ABI_VERSION of the loaded library.
 * @example abiVersion() // 1
 */
export function abiVersion(): number {
  return runtimeSymbols().pdrt_abi_version();
}

/**
 * Creates a context for one cluster id, listening when `listenIp` is given.
 * @example const p = create({ clusterId: 1n, role: 'prompt', listenIp: '127.0.0.2' })
 */
export function create(options: CreateOptions): RuntimeHandle {
  const clusterId = checkU64(options.clusterId, 'clusterId');
  const role = ROLE[options.role];
  if (role === undefined) throw invalid('role', `must be one of ${Object.keys(ROLE).join(', ')}`);
  const listenIp = options.listenIp ?? '';
  const listenPort = checkInt(options.listenPort ?? 0, 'listenPort', 0, 65535);
  if (listenPort > 0 && listenIp === '') throw invalid('listenIp', 'is required with a listenPort');
  if (listenIp !== '' && isIP(listenIp) === 0) throw invalid('listenIp', 'must be a numeric IPv4 or IPv6 address');
  writeIp(ipText, 0, listenIp, 'listenIp');
  packConfig(config, options.linkSecret, options.linkPort);
  const rc = runtimeSymbols().pdrt_create(clusterId, role, listenIp === '' ? null : ipText, listenPort, config, ctxOut);
  config.fill(0); // the secret's address, not the secret, but nothing to keep
  check(rc, `pdrt_create(cluster ${clusterId}, ${listenIp === '' ? 'client only' : `${listenIp}:${listenPort}`})`);
  return Number(ctxOut[0]);
}

/**
 * Destroys a context: closes its links (peers see them break) and frees its caches.
 * @example destroy(handle)
 */
export function destroy(handle: RuntimeHandle): void {
  check(runtimeSymbols().pdrt_destroy(asPointer(handle)), 'pdrt_destroy');
}

/**
 * The port a context listens on (0 for a client-only context).
 * @example const port = listenPort(p)
 */
export function listenPort(handle: RuntimeHandle): number {
  check(runtimeSymbols().pdrt_listen_port(asPointer(handle), portOut), 'pdrt_listen_port');
  return portOut[0] ?? 0;
}

/**
 * Turns the same-host shared-memory path on (default) or off, for links made afterwards.
 * @example setOption(d, 'sameHostFastpath', false)
 */
export function setOption(handle: RuntimeHandle, option: keyof typeof OPTION, enabled: boolean): void {
  const id = OPTION[option];
  if (id === undefined) throw invalid('option', `must be one of ${Object.keys(OPTION).join(', ')}`);
  check(runtimeSymbols().pdrt_set_option(asPointer(handle), id, enabled ? 1 : 0), `pdrt_set_option(${option})`);
}

/** Refuses a batch the C call cannot take: more than 16 clusters, none, or a timeout out of range. */
export function checkBatch(op: string, n: number, timeoutMs: number): void {
  if (n > MAX_CLUSTERS_PER_CALL) {
    throw new LlmStatusError(LLM_STATUS.LLM_CLUSTER_NUM_EXCEED_LIMIT, `pdrt_${op}: ${n} clusters, at most ${MAX_CLUSTERS_PER_CALL}`);
  }
  if (!Number.isInteger(n) || n < 1) throw invalid('clusters', 'must name at least one cluster');
  checkInt(timeoutMs, 'timeoutMs', 1, INT32_MAX);
}

/** Per-cluster outcomes are results; a call the runtime refused as a whole is an error. */
function settle(op: string, ret: number): number {
  if (ret !== LLM_STATUS.LLM_SUCCESS && ret !== LLM_STATUS.LLM_FAILED) check(ret, `pdrt_${op}`);
  return ret;
}

/**
 * Links to up to 16 clusters concurrently; one code per cluster, in input order.
 * @example const { ret, rets } = link(d, [{ remoteClusterId: 1n, remoteIp: '127.0.0.2', remotePort: 26000 }], 3000)
 */
export function link(handle: RuntimeHandle, clusters: readonly ClusterSpec[], timeoutMs: number): BatchResult {
  const ctx = asPointer(handle);
  checkBatch('link', clusters.length, timeoutMs);
  packClusters(records, recordsView, clusters);
  const ret = settle('link', runtimeSymbols().pdrt_link(ctx, records, clusters.length, timeoutMs, retsOut));
  return { ret, rets: Array.from(retsOut.subarray(0, clusters.length)) };
}

/**
 * Unlinks (either side of a link), normally or by force; one code per cluster, in input order.
 * @example unlink(p, [{ remoteClusterId: 2n, remoteIp: '', remotePort: 0 }], 3000, true)
 */
export function unlink(handle: RuntimeHandle, clusters: readonly ClusterSpec[], timeoutMs: number, force = false): BatchResult {
  const ctx = asPointer(handle);
  checkBatch('unlink', clusters.length, timeoutMs);
  packClusters(records, recordsView, clusters);
  const ret = settle('unlink', runtimeSymbols().pdrt_unlink(ctx, records, clusters.length, timeoutMs, force ? 1 : 0, retsOut));
  return { ret, rets: Array.from(retsOut.subarray(0, clusters.length)) };
}

function checkRecords(records: Uint8Array, n: number, rets: Int32Array, timeoutMs: number, op: string): void {
  checkBatch(op, n, timeoutMs);
  if (records.byteLength < n * CLUSTER_BYTES) throw invalid('records', `must hold ${n} records of ${CLUSTER_BYTES} bytes`);
  if (rets.length < n) throw invalid('rets', `must hold ${n} codes`);
}

/**
 * pdrt_link on pdrt_cluster records as they are (e.g. in a SharedArrayBuffer); codes land in rets.
 * @example const ret = linkRecords(d, sharedRecords(buf, n), n, 3000, sharedRets(buf, n))
 */
export function linkRecords(handle: RuntimeHandle, records: Uint8Array, n: number, timeoutMs: number, rets: Int32Array): number {
  const ctx = asPointer(handle);
  checkRecords(records, n, rets, timeoutMs, 'link');
  return settle('link', runtimeSymbols().pdrt_link(ctx, records, n, timeoutMs, rets));
}

/**
 * pdrt_unlink on pdrt_cluster records as they are; codes land in rets.
 * @example const ret = unlinkRecords(d, records, n, 3000, false, rets)
 */
export function unlinkRecords(
  handle: RuntimeHandle,
  records: Uint8Array,
  n: number,
  timeoutMs: number,
  force: boolean,
  rets: Int32Array,
): number {
  const ctx = asPointer(handle);
  checkRecords(records, n, rets, timeoutMs, 'unlink');
  return settle('unlink', runtimeSymbols().pdrt_unlink(ctx, records, n, timeoutMs, force ? 1 : 0, rets));
}

/**
 * Drains up to `max` queued events (peer lost / linked / unlinked, link unusable).
 * @example for (const e of pollEvents(p)) if (e.kind === EVENT_KIND.peerLost) forget(e.remoteClusterId)
 */
export function pollEvents(handle: RuntimeHandle, max = EVENT_CHUNK): PdrtEvent[] {
  const ctx = asPointer(handle);
  checkInt(max, 'max', 1, 0xffffffff);
  const out: PdrtEvent[] = [];
  while (out.length < max) {
    const cap = Math.min(EVENT_CHUNK, max - out.length);
    check(runtimeSymbols().pdrt_poll_events(ctx, events, cap, countOut), 'pdrt_poll_events');
    const n = countOut[0] ?? 0;
    for (let i = 0; i < n; i++) out.push(decodeEvent(eventsView, i));
    if (n < cap) break;
  }
  return out;
}

/**
 * Blocks until an event is queued (true) or timeoutMs passes (false).
 * @example if (waitEvents(p, 1000)) handle(pollEvents(p))
 */
export function waitEvents(handle: RuntimeHandle, timeoutMs: number): boolean {
  const ctx = asPointer(handle);
  const rc = runtimeSymbols().pdrt_wait_events(ctx, checkInt(timeoutMs, 'timeoutMs', 0, INT32_MAX));
  if (rc === LLM_STATUS.LLM_TIMEOUT) return false;
  check(rc, 'pdrt_wait_events');
  return true;
}

/**
 * The links a context holds now, on both sides, with their state.
 * @example listLinks(p).filter((l) => l.side === SIDE.server)
 */
export function listLinks(handle: RuntimeHandle): RuntimeLinkInfo[] {
  const ctx = asPointer(handle);
  for (;;) {
    const cap = linkInfos.byteLength / LINK_INFO_BYTES;
    check(runtimeSymbols().pdrt_list_links(ctx, linkInfos, cap, countOut, totalOut), 'pdrt_list_links');
    const total = totalOut[0] ?? 0;
    if (total > cap) {
      linkInfos = new Uint8Array((total + 16) * LINK_INFO_BYTES);
      linkInfosView = new DataView(linkInfos.buffer);
      continue;
    }
    const out: RuntimeLinkInfo[] = [];
    for (let i = 0; i < (countOut[0] ?? 0); i++) out.push(decodeLinkInfo(linkInfos, linkInfosView, i));
    return out;
  }
}
