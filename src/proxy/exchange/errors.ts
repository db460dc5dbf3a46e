/**
 * Errors the proxy itself produces on the inference listener, in the shape OpenAI clients parse:
 * `{"error": {"message", "type", "code", "param"}}` (plus `issues` for a rejected body), as a JSON
 * response before the first byte and as one SSE `data:` event after it.
 */
import { errors, PdlinkError } from '../../core/errors.ts';

/** The header that names a request on the client side and on both legs. */
export const REQUEST_ID_HEADER = 'x-request-id';

export interface OpenAiError {
  message: string;
  /** `invalid_request_error` (4xx), `rate_limit_error` (429) or `server_error` (5xx). */
  type: string;
  /** pdlink's stable error code, e.g. `upstream_failed`, `timeout`, `too_many_requests`. */
  code: string;
  /** The first offending field of a rejected body, else null. */
  param: string | null;
  issues?: { path: string; message: string }[];
}

export interface OpenAiErrorBody {
  error: OpenAiError;
}

/**
 * The OpenAI-style body of a PdlinkError.
 * @example openAiErrorBody(errors.tooManyRequests(10)).error.type // 'rate_limit_error'
 */
export function openAiErrorBody(err: PdlinkError): OpenAiErrorBody {
  const error: OpenAiError = { message: err.message, type: errorType(err.status), code: err.code, param: err.issues[0]?.path || null };
  if (err.issues.length > 0) error.issues = err.issues.map((i) => ({ path: i.path, message: i.message }));
  return { error };
}

/**
 * A JSON error response carrying the request id.
 * @example return errorResponse(errors.unavailable('no decode instance'), requestId);
 */
export function errorResponse(err: PdlinkError, requestId: string | undefined): Response {
  const headers = new Headers({ 'content-type': 'application/json' });
  if (requestId !== undefined) headers.set(REQUEST_ID_HEADER, requestId);
  return new Response(JSON.stringify(openAiErrorBody(err)), { status: err.status, headers });
}

const encoder = new TextEncoder();

/**
 * The SSE event that ends a stream whose upstream failed after the first byte.
 * @example controller.enqueue(sseErrorEvent(errors.upstreamFailed('decode instance 3 closed the stream')));
 */
export function sseErrorEvent(err: PdlinkError): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify(openAiErrorBody(err))}\n\n`);
}

/**
 * Any thrown value as a PdlinkError; unknown ones are logged and become a generic 500.
 * @example const known = asPdlinkError(caught);
 */
export function asPdlinkError(err: unknown): PdlinkError {
  if (err instanceof PdlinkError) return err;
  console.error('pdlink: proxy error', err);
  return errors.internal(err);
}

function errorType(status: number): string {
  if (status === 429) return 'rate_limit_error';
  if (status === 401) return 'authentication_error';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}
