/**
 * The fixed C layouts of pdrt.h (pdrt_cluster, pdrt_event, pdrt_link_info) and its constants,
 * with the packing and decoding the facade does through DataView (little-endian hosts).
 */
import { invalid } from './check.ts';

export const CLUSTER_BYTES = 144;
export const EVENT_BYTES = 32;
export const LINK_INFO_BYTES = 88;
export const IP_MAX = 64;
export const MAX_CLUSTERS_PER_CALL = 16;
/** PDRT_MAX_BLOCKS_PER_TRANSFER: blocks of one pull or push (2^24). */
export const MAX_BLOCKS_PER_TRANSFER = 1 << 24;

/** PDRT_ROLE_*. */
export const ROLE = { prompt: 0, decoder: 1, mix: 2 } as const;
export type RoleName = keyof typeof ROLE;

/** PDRT_EVENT_*. */
export const EVENT_KIND = { peerLost: 1, peerLinked: 2, peerUnlinked: 3, linkUnusable: 4 } as const;

/** PDRT_SIDE_*: which end of the link this context is. */
export const SIDE = { client: 0, server: 1 } as const;

/** PDRT_LINK_*. */
export const LINK_STATE = { linking: 1, linked: 2, unlinking: 3, unusable: 4 } as const;

/** PDRT_OPT_*. */
export const OPTION = { sameHostFastpath: 1 } as const;

/** One cluster of a link/unlink call (LLM-DataDist's LLMClusterInfo with one remote address). */
export interface ClusterSpec {
  readonly remoteClusterId: bigint;
  /** Numeric IPv4/IPv6 text; may be "" for unlink, which is keyed by the cluster id. */
  readonly remoteIp: string;
  /** 1..65535 for link; ignored by unlink. */
  readonly remotePort: number;
  /** "" or absent = any local address. */
  readonly localIp?: string;
  /** 0 or absent = any local port. */
  readonly localPort?: number;
}

/** One pdrt_event record as the runtime queued it (numbers as pdrt.h defines them). */
export interface PdrtEvent {
  /** EVENT_KIND value. */
  readonly kind: number;
  /** SIDE value of this context on that link. */
  readonly side: number;
  readonly remoteClusterId: bigint;
  /** Status behind the event (LLM_SUCCESS when none). */
  readonly code: number;
  /** Epoch milliseconds. */
  readonly timeMs: number;
}

export interface RuntimeLinkInfo {
  readonly remoteClusterId: bigint;
  /** SIDE value. */
  readonly side: number;
  /** LINK_STATE value. */
  readonly state: number;
  readonly transfersInFlight: number;
  /** The server's listen address on the client side; the client's source address on the server side. */
  readonly remoteIp: string;
  readonly remotePort: number;
  /** Transfers on this link use shared memory. */
  readonly sameHost: boolean;
}

const MAX_U64 = (1n << 64n) - 1n;
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/**
 * Refuses a cluster id outside uint64.
 * @example checkU64(5n, 'clusterId')
 */
export function checkU64(value: bigint, field: string): bigint {
  if (typeof value !== 'bigint' || value < 0n || value > MAX_U64) throw invalid(field, 'must be a bigint in [0, 2^64-1]');
  return value;
}

/**
 * Refuses anything but an integer in [min, max].
 * @example checkInt(3000, 'timeoutMs', 1, 0x7fffffff)
 */
export function checkInt(value: number, field: string, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) throw invalid(field, `must be an integer in [${min}, ${max}]`);
  return value;
}

/**
 * Writes text NUL-terminated into a 64-byte field at offset; the rest of the field is zeroed.
 * @example writeIp(bytes, 16, '127.0.0.2', 'clusters[0].remoteIp')
 */
export function writeIp(bytes: Uint8Array, offset: number, text: string, field: string): void {
  const slot = bytes.subarray(offset, offset + IP_MAX);
  slot.fill(0);
  if (typeof text !== 'string') throw invalid(field, 'must be a string');
  if (text.includes('\0')) throw invalid(field, 'must not contain NUL');
  const { read, written } = utf8.encodeInto(text, slot.subarray(0, IP_MAX - 1));
  if (read !== text.length || written > IP_MAX - 1) throw invalid(field, `longer than ${IP_MAX - 1} bytes`);
}

function readIp(bytes: Uint8Array, offset: number): string {
  const slot = bytes.subarray(offset, offset + IP_MAX);
  const end = slot.indexOf(0);
  return utf8Decoder.decode(slot.subarray(0, end < 0 ? IP_MAX : end));
}

/**
 * Packs clusters as pdrt_cluster records at the start of `bytes` (which must hold them all).
 * @example packClusters(records, view, [{ remoteClusterId: 1n, remoteIp: '127.0.0.2', remotePort: 26000 }])
 */
export function packClusters(bytes: Uint8Array, view: DataView, clusters: readonly ClusterSpec[]): void {
  clusters.forEach((c, i) => {
    const base = i * CLUSTER_BYTES;
    view.setBigUint64(base, checkU64(c.remoteClusterId, `clusters[${i}].remoteClusterId`), true);
    view.setUint16(base + 8, checkInt(c.remotePort, `clusters[${i}].remotePort`, 0, 65535), true);
    view.setUint16(base + 10, checkInt(c.localPort ?? 0, `clusters[${i}].localPort`, 0, 65535), true);
    view.setUint32(base + 12, 0, true);
    writeIp(bytes, base + 16, c.remoteIp, `clusters[${i}].remoteIp`);
    writeIp(bytes, base + 80, c.localIp ?? '', `clusters[${i}].localIp`);
  });
}

/**
 * Decodes the pdrt_event at index i.
 * @example const first = decodeEvent(view, 0)
 */
export function decodeEvent(view: DataView, i: number): PdrtEvent {
  const base = i * EVENT_BYTES;
  return {
    kind: view.getUint32(base, true),
    side: view.getUint32(base + 4, true),
    remoteClusterId: view.getBigUint64(base + 8, true),
    code: view.getInt32(base + 16, true),
    timeMs: Number(view.getBigUint64(base + 24, true)),
  };
}

/**
 * Decodes the pdrt_link_info at index i.
 * @example const link = decodeLinkInfo(bytes, view, 0)
 */
export function decodeLinkInfo(bytes: Uint8Array, view: DataView, i: number): RuntimeLinkInfo {
  const base = i * LINK_INFO_BYTES;
  return {
    remoteClusterId: view.getBigUint64(base, true),
    side: view.getUint32(base + 8, true),
    state: view.getUint32(base + 12, true),
    transfersInFlight: view.getUint32(base + 16, true),
    remotePort: view.getUint16(base + 20, true),
    sameHost: view.getUint16(base + 22, true) !== 0,
    remoteIp: readIp(bytes, base + 24),
  };
}
