/**
 * Bodies of `POST /v1/links/link` and `POST /v1/links/unlink` (LLM-DataDist link_clusters /
 * unlink_clusters over HTTP). Cluster ids come out as exact bigints; addresses as `{ip, port}`.
 */
import * as v from 'valibot';
import { UnsafeInteger } from '../core/exact-json.ts';
import { parseIpPort } from '../net/ip-port.ts';
import { INT32_MAX, UINT64_MAX } from '../core/limits.ts';

/** Default link/unlink timeout in milliseconds, as LLM-DataDist's Python API. */
export const DEFAULT_LINK_TIMEOUT_MS = 3000;
/** Largest timeout: an int32. */
export const MAX_LINK_TIMEOUT_MS = INT32_MAX;

const UINT64_MESSAGE = 'must be an unsigned 64-bit integer (a JSON number or a decimal string)';

function toUint64(value: unknown): bigint | undefined {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) return undefined;
    text = String(value);
  } else if (typeof value === 'string') text = value;
  else if (value instanceof UnsafeInteger) text = value.source;
  else return undefined;
  if (!/^\d{1,20}$/.test(text)) return undefined;
  const id = BigInt(text);
  return id <= UINT64_MAX ? id : undefined;
}

/** uint64 given as a JSON number (exact) or a decimal string; output is a bigint. */
export const ClusterIdSchema = v.pipe(
  v.custom<number | string | UnsafeInteger>((value) => toUint64(value) !== undefined, UINT64_MESSAGE),
  v.transform((value) => toUint64(value) as bigint),
);

/** `"ip:port"`, IPv6 as `"[::1]:port"`, port 1..65535. */
export const RemoteIpInfoSchema = v.pipe(
  v.string('must be a string "ip:port"'),
  v.check(
    (text) => parseIpPort(text) !== undefined,
    'must be "ip:port" with an IPv4 address or a bracketed IPv6 address and a port in 1..65535',
  ),
  v.transform((text) => parseIpPort(text)!),
);

/** `"ip:port"` or `"ip"` alone; port 0 (or none) lets the runtime choose. */
export const LocalIpInfoSchema = v.pipe(
  v.string('must be a string "ip" or "ip:port"'),
  v.check((text) => localAddress(text) !== undefined, 'must be an IP address, optionally with ":port" (IPv6 as "[::1]:port")'),
  v.transform((text) => localAddress(text)!),
);

function localAddress(text: string): { ip: string; port: number } | undefined {
  const withPort = parseIpPort(text, true);
  if (withPort !== undefined) return withPort;
  return parseIpPort(`${text.includes(':') ? `[${text}]` : text}:0`, true);
}

export const ClusterSchema = v.object({
  remote_cluster_id: ClusterIdSchema,
  remote_ip_info: RemoteIpInfoSchema,
  local_ip_info: v.optional(LocalIpInfoSchema),
});

const TimeoutSchema = v.optional(
  v.pipe(
    v.number('must be an integer number of milliseconds'),
    v.integer('must be an integer number of milliseconds'),
    v.minValue(1, 'must be > 0'),
    v.maxValue(MAX_LINK_TIMEOUT_MS, `must be at most ${MAX_LINK_TIMEOUT_MS} (int32)`),
  ),
  DEFAULT_LINK_TIMEOUT_MS,
);

const ClustersSchema = v.pipe(v.array(ClusterSchema, 'must be an array of clusters'), v.minLength(1, 'must name at least one cluster'));

/** Body of `POST /v1/links/link`. More than 16 clusters is valid here: the API answers CLUSTER_NUM_EXCEED_LIMIT. */
export const LinkRequestSchema = v.pipe(jsonObject(), v.object({ clusters: ClustersSchema, timeout: TimeoutSchema }));

/** Body of `POST /v1/links/unlink`. */
export const UnlinkRequestSchema = v.pipe(
  jsonObject(),
  v.object({ clusters: ClustersSchema, timeout: TimeoutSchema, force: v.optional(v.boolean('must be a boolean'), false) }),
);

// Valibot's object schema takes arrays for objects; a top-level array is off-spec as a whole.
function jsonObject() {
  return v.custom<Record<string, unknown>>(
    (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
    'must be a JSON object',
  );
}

export type LinkRequest = v.InferOutput<typeof LinkRequestSchema>;
export type UnlinkRequest = v.InferOutput<typeof UnlinkRequestSchema>;
