/**
 * LLM-DataDist's `"ip:port"` address text (IPv6 as `"[::1]:port"`), parsed and written the one
 * way every layer needs it: the link schema validating a request, the link manager keying its
 * table, the agent printing its status.
 */
import { isIPv4, isIPv6 } from 'node:net';

export interface IpPort {
  readonly ip: string;
  readonly port: number;
}

/**
 * Parses `"ip:port"` (IPv6 as `"[::1]:port"`); `undefined` when the text is not of that form or
 * the port is outside 1..65535 (0 too when `allowAnyPort`).
 * @example parseIpPort('127.0.0.2:26000') // { ip: '127.0.0.2', port: 26000 }
 */
export function parseIpPort(text: string, allowAnyPort = false): IpPort | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  if (match === null) return undefined;
  const ip = match[1] ?? match[2] ?? '';
  const port = Number(match[3]);
  if (match[1] !== undefined ? !isIPv6(ip) : !isIPv4(ip)) return undefined;
  if (port > 65535 || (port === 0 && !allowAnyPort)) return undefined;
  return { ip, port };
}

/**
 * Formats an address as LLM-DataDist writes it, IPv6 in brackets.
 * @example formatIpPort({ ip: '::1', port: 26000 }) // '[::1]:26000'
 */
export function formatIpPort(address: IpPort): string {
  return isIPv6(address.ip) ? `[${address.ip}]:${address.port}` : `${address.ip}:${address.port}`;
}
