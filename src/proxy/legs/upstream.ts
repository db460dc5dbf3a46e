/**
 * The HTTP side of a leg: one POST to an engine, over keep-alive connections pooled per origin, so
 * consecutive requests to an instance reuse its connections: on Bun over its TCP sockets for plain
 * HTTP (platform/h1-client.ts) and its fetch for https, on Deno over fetch.
 */
import type { AbortParent } from './abort-scope.ts';
import { withIdleTimeout } from './idle.ts';
import { REQUEST_ID_HEADER } from '../exchange/errors.ts';
import type { LegHeaders } from './legs.ts';
import type { ChunkReader } from '../decode/stream.ts';
import type { ClientTlsOptions } from '../../platform/tls-options.ts';
import type { EngineClient } from '../../schema/proxy-protocol.ts';
import { platform } from '../../platform/index.ts';
import { answerOf, type LegAnswer } from '../../platform/platform.ts';

/** Requests Bun's fetch runs at once unless `BUN_CONFIG_MAX_HTTP_REQUESTS` says otherwise; more wait in a queue. */
export const BUN_DEFAULT_MAX_HTTP_REQUESTS = 256;

/**
 * A warning when Bun's fetch would run fewer requests at once than the proxy admits. Each admitted
 * request holds one leg open at a time (a D stream for its whole length), so with the default cap
 * of 256 the 257th request would wait for a slot with no sign of why. The variable is read when
 * Bun starts: it must be in the environment of the process, not set from code.
 * @example const warning = fetchCapWarning(settings.maxInFlight, process.env); if (warning) console.warn(warning);
 */
export function fetchCapWarning(maxInFlight: number, env: Record<string, string | undefined>): string | undefined {
  if (typeof Bun === 'undefined') return undefined;
  const configured = Number(env['BUN_CONFIG_MAX_HTTP_REQUESTS']);
  const cap = Number.isInteger(configured) && configured > 0 ? configured : BUN_DEFAULT_MAX_HTTP_REQUESTS;
  if (cap >= maxInFlight) return undefined;
  return (
    `pdlink: Bun's fetch runs at most ${cap} requests at once but the proxy admits ${maxInFlight} (request_limit.max_requests); ` +
    `requests beyond ${cap} wait for a free connection slot. Start the process with BUN_CONFIG_MAX_HTTP_REQUESTS=${Math.min(maxInFlight, 65_535)}.`
  );
}

/** Longest excerpt of an engine's error body quoted in a proxy error message. */
export const MAX_QUOTED_CHARS = 300;

/** Which client a leg goes over: https legs over fetch with `engineTls`; plain ones as `engineClient` says. */
export interface LegClient {
  readonly engineTls?: ClientTlsOptions | undefined;
  /** `sockets` (the default): the platform's own (platform/h1-client.ts on Bun); `fetch`: fetch. */
  readonly engineClient?: EngineClient;
}

/**
 * Sends one leg, failing it when the engine stays silent for `idleMs` (http_timeout_seconds, see
 * idle.ts). Redirects are not followed: an engine that redirects is misconfigured, and the answer
 * is judged like any other non-2xx status.
 * @example const res = await postLeg(url, headers, text, signal, settings.engineIdleTimeoutMs, settings);
 */
export function postLeg(
  url: string,
  headers: LegHeaders,
  body: string,
  signal: AbortParent,
  idleMs = Infinity,
  client: LegClient = {},
): Promise<LegAnswer> {
  const tls = client.engineTls;
  // Plain legs go over the platform's cheapest client (on Bun, sockets of its own: see platform/h1-client.ts).
  if (tls === undefined && client.engineClient !== 'fetch') {
    return withIdleTimeout((abort) => platform.postPlain(url, headers, body, abort), signal, idleMs);
  }
  // The seam keeps one pool per TLS config (Bun per origin and options, Deno per client), so keep-alive holds.
  const tlsInit = tls === undefined ? undefined : platform.tlsInit(tls);
  return withIdleTimeout(
    (abort) => fetch(url, { method: 'POST', headers, body, redirect: 'manual', ...tlsInit, signal: abort.signal }).then(answerOf),
    signal,
    idleMs,
  );
}

/**
 * An engine's answer returned to the client as it is: status, content type and body, plus the request id.
 * @example return passthrough(res.status, res.headers.get('content-type'), text, requestId);
 */
export function passthrough(status: number, contentType: string | null, body: string | Uint8Array, requestId: string): Response {
  const headers: Record<string, string> =
    contentType === null ? { [REQUEST_ID_HEADER]: requestId } : { [REQUEST_ID_HEADER]: requestId, 'content-type': contentType };
  return new Response(body, { status, headers });
}

/**
 * The headers of a streamed answer: D's content type, no caching by intermediaries, the request id.
 * @example new Response(stream, { status: res.status, headers: streamHeaders(res, requestId) })
 */
export function streamHeaders(res: Pick<LegAnswer, 'headers'>, requestId: string): Record<string, string> {
  return {
    'content-type': res.headers.get('content-type') ?? 'text/event-stream',
    [REQUEST_ID_HEADER]: requestId,
    'cache-control': 'no-cache',
  };
}

/**
 * The error an engine answered, shortened for a message: OpenAI-style `error.message` when there is one, else the text.
 * @example quoteError('{"error":{"message":"boom"}}') // 'boom'
 */
export function quoteError(text: string): string {
  let quoted = text;
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown };
    const error = parsed.error;
    if (typeof error === 'string') quoted = error;
    else if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
      quoted = (error as { message: string }).message;
    } else if (typeof parsed.message === 'string') quoted = parsed.message;
  } catch {
    // Not JSON: quote the text itself.
  }
  quoted = quoted.trim();
  return quoted.length > MAX_QUOTED_CHARS ? `${quoted.slice(0, MAX_QUOTED_CHARS)}…` : quoted;
}

/**
 * The message of a transport error (connection refused, reset...), with its code when Bun gives one.
 * @example transportMessage(err) // 'ECONNREFUSED: Unable to connect...'
 */
export function transportMessage(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && !error.message.startsWith(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

/**
 * Reads the first non-empty chunk of a body; `null` when the body ends before any byte.
 * @example const first = await firstChunk(reader);
 */
export async function firstChunk(reader: ChunkReader): Promise<Uint8Array | null> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return null;
    if (value.byteLength > 0) return value;
  }
}
