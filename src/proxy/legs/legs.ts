/**
 * The two legs of a PD request as the engines expect them (vLLM's disaggregated-serving contract):
 * P computes the prompt's KV cache and keeps it for a remote decoder; D receives P's
 * `kv_transfer_params`, pulls the blocks and generates.
 */
import type { Instance } from '../../cluster/instance.ts';
import { errors } from '../../core/errors.ts';
import { stringifyBody, type CompletionKind } from '../../schema/completions.ts';
import { REQUEST_ID_HEADER } from '../exchange/errors.ts';
import { LEG_ACCEPT_ENCODING } from './unusable-answer.ts';

/** What P is asked to do with the KV cache: keep it for a remote decoder. */
export const PREFILL_KV_REQUEST = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
} as const;

/** Fields P must not see: it generates exactly one token, so a minimum length would contradict it. */
const PREFILL_DROPPED = ['stream_options', 'min_tokens', 'min_completion_tokens'] as const;

/**
 * A leg's request headers as a plain object: fetch takes it as it is, where a `Headers` per leg
 * was a measurable part of the proxy's per-request cost.
 */
export type LegHeaders = Record<string, string>;

/**
 * The `Via` the legs carry: the client's, plus this proxy's own hop, so a request that comes back
 * (an instance address pointing at the Coordinator itself) is recognised instead of looping.
 * @example viaHeader('1.1 gateway', 'pdlink-1f2e') // '1.1 gateway, 1.1 pdlink-1f2e'
 */
export function viaHeader(clientVia: string | undefined, token: string): string {
  return clientVia === undefined || clientVia === '' ? `1.1 ${token}` : `${clientVia}, 1.1 ${token}`;
}

/** True when the client's `Via` already names this proxy's hop token. */
export function viaHasHop(clientVia: string | undefined, token: string): boolean {
  return clientVia !== undefined && clientVia.split(',').some((hop) => hop.trim().split(/\s+/)[1] === token);
}

/**
 * The P leg's body: the client's request generating one token, not streamed, asking P to keep the KV cache.
 * @example prefillBody({ model: 'm', prompt: 'hi', stream: true, max_tokens: 64 }).max_tokens // 1
 */
export function prefillBody(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const leg: Record<string, unknown> = { ...body, stream: false, max_tokens: 1, kv_transfer_params: { ...PREFILL_KV_REQUEST } };
  if ('max_completion_tokens' in body) leg['max_completion_tokens'] = 1;
  // Deleting a property turns the object into a slow dictionary: only when there is one to drop.
  for (const key of PREFILL_DROPPED) if (Object.hasOwn(leg, key)) delete leg[key];
  return leg;
}

/**
 * The D leg's body: the client's request as sent, plus P's `kv_transfer_params` exactly as P returned them.
 * Without them (P answered none) D gets the request unchanged and computes the prompt itself.
 * @example decodeBody(body, prefillAnswer.kv_transfer_params)
 */
export function decodeBody(body: Readonly<Record<string, unknown>>, kvTransferParams: unknown): Record<string, unknown> {
  if (kvTransferParams === undefined) return { ...body };
  return { ...body, kv_transfer_params: kvTransferParams };
}

/**
 * A leg's body as the text sent to an engine. Serialising happens before the leg is sent, outside
 * the code that judges the instance: the body is the client's (plus, on the D leg, P's answer,
 * which the parser held to the same nesting limit), so a body that cannot be written is the
 * client's error (400), never a failure of the instance it was meant for.
 * @throws PdlinkError `bad_request` when the body cannot be serialised.
 * @example const text = legText(prefillBody(body));
 */
export function legText(body: Readonly<Record<string, unknown>>): string {
  try {
    return stringifyBody(body);
  } catch (cause) {
    throw errors.unforwardableBody(cause);
  }
}

/**
 * The client headers a request keeps for its legs, read once from the client's request: its
 * credentials, `via` as the proxy extended it (see `viaHeader`), and its trace context when
 * tracing is on. A plain object: a `Headers` built per request and read per leg was a visible cost.
 */
export type ClientHeaders = Readonly<Partial<Record<'authorization' | 'via' | 'traceparent' | 'tracestate', string>>>;

/**
 * The headers of either leg: JSON in, an answer without content coding (see unusable-answer.ts),
 * the shared request id, and the client headers both legs carry unchanged (its credentials, and `via`).
 * @example legHeaders({ via: '1.1 pdlink-ab12' }, requestId)
 */
export function legHeaders(client: ClientHeaders, requestId: string): LegHeaders {
  const headers: LegHeaders = {
    'content-type': 'application/json',
    'accept-encoding': LEG_ACCEPT_ENCODING,
    [REQUEST_ID_HEADER]: requestId,
  };
  const { authorization, via } = client;
  if (authorization !== undefined) headers['authorization'] = authorization;
  if (via !== undefined) headers['via'] = via;
  return headers;
}

/**
 * The URL of an inference API on an instance: its `ip` and data `port`, IPv6 in brackets; https when
 * the legs are configured with TLS (`tls_config.mindie_client_tls_enable`).
 * @example engineUrl(instance, 'chat') // 'http://10.0.0.5:1025/v1/chat/completions'
 */
export function engineUrl(instance: Pick<Instance, 'ip' | 'port'>, kind: CompletionKind, https = false): string {
  const slot = (https ? 2 : 0) + (kind === 'chat' ? 1 : 0);
  let cached = spelled.get(instance);
  // Checked on every use: an instance's address may be changed in place by a refresh.
  if (cached === undefined || cached.ip !== instance.ip || cached.port !== instance.port) {
    cached = { ip: instance.ip, port: instance.port, urls: [undefined, undefined, undefined, undefined] };
    spelled.set(instance, cached);
  }
  let url = cached.urls[slot];
  if (url === undefined) {
    const host = instance.ip.includes(':') ? `[${instance.ip}]` : instance.ip;
    url = `${https ? 'https' : 'http'}://${host}:${instance.port}${kind === 'chat' ? '/v1/chat/completions' : '/v1/completions'}`;
    cached.urls[slot] = url;
  }
  return url;
}

/**
 * Each instance's URLs, spelled once: every leg needs one, and the same string each time also lets
 * the client's per-URL lookups hash it once.
 */
const spelled = new WeakMap<object, { ip: string; port: number; urls: (string | undefined)[] }>();
