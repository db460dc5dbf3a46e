/**
 * The KV-event publisher fields a refresh entry (or a topology file's instance) may carry:
 * `kv_events_endpoint` (data-parallel rank 0's ZeroMQ PUB, `tcp://HOST:PORT`),
 * `kv_events_replay_endpoint` (its ROUTER) and `kv_events_dp_size` (ranks publishing on consecutive
 * ports from those). One home for their rules, so the refresh's Valibot schema, its fast check and
 * the event intake that subscribes agree on what is usable.
 */
import { isIP } from 'node:net';

/** Most data-parallel ranks one instance publishes from. */
export const KV_EVENTS_DP_SIZE_MAX = 1024;
/** Longest endpoint text accepted. */
export const KV_ENDPOINT_MAX_LENGTH = 300;

const ENDPOINT = /^tcp:\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]]+):(\d{1,5})$/;

export const KV_ENDPOINT_MESSAGE = 'must be tcp://HOST:PORT (HOST a name, an IPv4 address, * or [an IPv6 address]; PORT in [1, 65535])';

/**
 * The port of a usable `tcp://HOST:PORT` endpoint, or -1.
 * @example kvEndpointPort('tcp://10.0.0.5:5557') // 5557; kvEndpointPort('tcp://h:0') // -1
 */
export function kvEndpointPort(x: unknown): number {
  if (typeof x !== 'string' || x.length > KV_ENDPOINT_MAX_LENGTH) return -1;
  const m = ENDPOINT.exec(x);
  if (m === null) return -1;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return -1;
  const host = m[1]!;
  if (host.startsWith('[') && isIP(host.slice(1, -1)) !== 6) return -1;
  return port;
}

/**
 * What is wrong with an entry's publisher fields, as [field, message], or undefined when they are
 * usable or absent (null counts as absent).
 * @example kvEventsIssue({ kv_events_endpoint: 'tcp://h' }) // ['kv_events_endpoint', 'must be tcp://HOST:PORT …']
 */
export function kvEventsIssue(entry: Readonly<Record<string, unknown>>): [string, string] | undefined {
  const endpoint = entry['kv_events_endpoint'];
  const replay = entry['kv_events_replay_endpoint'];
  const dpSize = entry['kv_events_dp_size'];
  if (endpoint !== undefined && endpoint !== null && kvEndpointPort(endpoint) < 0)
    return ['kv_events_endpoint', `${KV_ENDPOINT_MESSAGE}, got ${shown(endpoint)}`];
  if (replay !== undefined && replay !== null && kvEndpointPort(replay) < 0)
    return ['kv_events_replay_endpoint', `${KV_ENDPOINT_MESSAGE}, got ${shown(replay)}`];
  if (dpSize !== undefined && dpSize !== null && !isDpSize(dpSize))
    return ['kv_events_dp_size', `must be an integer in [1, ${KV_EVENTS_DP_SIZE_MAX}], got ${shown(dpSize)}`];
  return kvRanksIssue(entry);
}

/**
 * The one rule across the fields, for fields each usable on its own: rank r publishes on the
 * endpoints' ports + r, so the last rank's ports must not pass 65535.
 * @example kvRanksIssue({ kv_events_endpoint: 'tcp://h:65535', kv_events_dp_size: 2 }) // ['kv_events_dp_size', …]
 */
export function kvRanksIssue(entry: Readonly<Record<string, unknown>>): [string, string] | undefined {
  const dpSize = entry['kv_events_dp_size'];
  if (!isDpSize(dpSize)) return undefined;
  const top = Math.max(kvEndpointPort(entry['kv_events_endpoint']), kvEndpointPort(entry['kv_events_replay_endpoint'])) + dpSize - 1;
  if (top <= 65535) return undefined;
  return ['kv_events_dp_size', `ranks 0 to ${dpSize - 1} publish on ports up to ${top}, past 65535`];
}

function isDpSize(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x) && x >= 1 && x <= KV_EVENTS_DP_SIZE_MAX;
}

function shown(x: unknown): string {
  const text = JSON.stringify(x) ?? String(x);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
