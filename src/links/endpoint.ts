/**
 * Cluster ids of device endpoints: the deterministic rule that lets a decode agent compute a
 * prefill device's id from its address alone (the `"ip:port"` text itself is core/ip-port.ts).
 */
import { isIPv4, isIPv6 } from 'node:net';
import { UINT64_MAX } from '../core/limits.ts';

export { formatIpPort, parseIpPort, type IpPort } from '../net/ip-port.ts';

/** Largest uint64, the range of an LLM-DataDist cluster id. */
export const MAX_CLUSTER_ID = UINT64_MAX;

/** IPv6 ids carry this bit so they never collide with IPv4 ids, which stay below 2^48. */
const IPV6_ID_FLAG = 1n << 63n;

/**
 * The cluster id of the device endpoint listening on `ip:port`: for IPv4 the address as a u32
 * times 65536 plus the port (below 2^48, so exact in JSON numbers too); for IPv6 a 63-bit FNV-1a
 * hash of the canonical address and port with bit 63 set.
 * @example clusterIdFor('127.0.0.2', 26000) // 139637976737360n ((0x7f000002 << 16) + 26000)
 */
export function clusterIdFor(ip: string, port: number): bigint {
  if (isIPv4(ip)) {
    const u32 = ip.split('.').reduce((acc, octet) => acc * 256n + BigInt(Number(octet)), 0n);
    return u32 * 65536n + BigInt(port);
  }
  if (isIPv6(ip)) return IPV6_ID_FLAG | (fnv1a64(`${canonicalIPv6(ip)}|${port}`) & (IPV6_ID_FLAG - 1n));
  throw new RangeError(`not an IP address: ${JSON.stringify(ip)}`);
}

/**
 * A cluster id as JSON carries it exactly: a number up to 2^53−1, a decimal string beyond.
 * @example clusterIdToWire(18446744073709551615n) // '18446744073709551615'
 */
export function clusterIdToWire(id: bigint): number | string {
  return id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : id.toString();
}

function canonicalIPv6(ip: string): string {
  // Expand "::" and drop leading zeros so equal addresses written differently hash alike.
  const [head = '', tail] = ip.toLowerCase().split('::');
  const headParts = head === '' ? [] : head.split(':');
  const tailParts = tail === undefined || tail === '' ? [] : tail.split(':');
  const expandParts = (parts: string[]): string[] => parts.flatMap((p) => (p.includes('.') ? ipv4ToHextets(p) : [p]));
  const h = expandParts(headParts);
  const t = expandParts(tailParts);
  const fill = tail === undefined ? [] : new Array<string>(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((p) => Number.parseInt(p, 16).toString(16)).join(':');
}

function ipv4ToHextets(ipv4: string): string[] {
  const o = ipv4.split('.').map(Number);
  return [(((o[0] ?? 0) << 8) | (o[1] ?? 0)).toString(16), (((o[2] ?? 0) << 8) | (o[3] ?? 0)).toString(16)];
}

function fnv1a64(text: string): bigint {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & MAX_CLUSTER_ID;
  }
  return hash;
}
