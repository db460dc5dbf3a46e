/**
 * The HTTP side of a leg: one POST to an engine over Bun's fetch, which keeps one keep-alive
 * connection pool per origin, so consecutive requests to an instance reuse its connections.
 */
import { REQUEST_ID_HEADER } from './errors.ts';
import type { ChunkReader } from './stream.ts';

/** Longest excerpt of an engine's error body quoted in a proxy error message. */
export const MAX_QUOTED_CHARS = 300;

/**
 * Sends one leg. Redirects are not followed: an engine that redirects is misconfigured, and
 * the answer is judged like any other non-2xx status.
 * @example const res = await postLeg(url, headers, text, signal);
 */
export function postLeg(url: string, headers: Headers, body: string, signal: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers, body, signal, redirect: 'manual' });
}

/**
 * An engine's answer returned to the client as it is: status, content type and body, plus the request id.
 * @example return passthrough(res.status, res.headers.get('content-type'), text, requestId);
 */
export function passthrough(status: number, contentType: string | null, body: string | ArrayBuffer, requestId: string): Response {
  const headers = new Headers({ [REQUEST_ID_HEADER]: requestId });
  if (contentType !== null) headers.set('content-type', contentType);
  return new Response(body, { status, headers });
}

/**
 * The headers of a streamed answer: D's content type, no caching by intermediaries, the request id.
 * @example new Response(stream, { status: res.status, headers: streamHeaders(res, requestId) })
 */
export function streamHeaders(res: Response, requestId: string): Headers {
  const headers = new Headers({ 'content-type': res.headers.get('content-type') ?? 'text/event-stream', [REQUEST_ID_HEADER]: requestId });
  headers.set('cache-control', 'no-cache');
  return headers;
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
