/**
 * ZeroMQ TCP endpoints as engines spell them (`tcp://host:port`, `tcp://*:port` to bind every
 * interface, `tcp://[::1]:port`), and vLLM's rule for data parallelism: rank r publishes on the base
 * port + r.
 */
import { isIP } from 'node:net';

export interface TcpEndpoint {
  /** A host name or address; '*' became the any-address of its family. */
  readonly host: string;
  readonly port: number;
}

/**
 * Parses a `tcp://` endpoint; returns a sentence saying what is wrong instead when it is not one.
 * @example parseEndpoint('tcp://10.0.0.5:5557') // { host: '10.0.0.5', port: 5557 }
 */
export function parseEndpoint(text: string): TcpEndpoint | string {
  const m = /^tcp:\/\/(\[[0-9a-fA-F:.]+\]|[^:/\[\]]+):(\d{1,5})$/.exec(text);
  if (m === null) return 'must be tcp://HOST:PORT';
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return 'port must be in [1, 65535]';
  let host = m[1]!;
  if (host.startsWith('[')) {
    host = host.slice(1, -1);
    if (isIP(host) !== 6) return `${host} is not an IPv6 address`;
  }
  return { host: host === '*' ? '0.0.0.0' : host, port };
}

/**
 * The endpoint of data-parallel rank `rank` given rank 0's (vLLM: port + rank).
 * @example rankEndpoint('tcp://h:5557', 2) // 'tcp://h:5559'
 */
export function rankEndpoint(endpoint: string, rank: number): string {
  if (rank === 0) return endpoint;
  const at = endpoint.lastIndexOf(':');
  return `${endpoint.slice(0, at)}:${Number(endpoint.slice(at + 1)) + rank}`;
}

/**
 * The endpoint's text for a host and port (IPv6 in brackets).
 * @example endpointText('::1', 5557) // 'tcp://[::1]:5557'
 */
export function endpointText(host: string, port: number): string {
  return `tcp://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}
