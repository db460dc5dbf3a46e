/**
 * The error envelope every pdlink route answers with: `{"error", "error_type", "issues"?}` (its
 * shape is core/error-body.ts). Unknown errors are logged and rendered as a generic 500 without
 * details. A client that left mid-body is one line on stderr, no stack: it happens to every server
 * and says nothing is wrong.
 */
import type { Context } from 'hono';
import { asPdlinkError, errorBody } from '../web/error-body.ts';
import { errors, type PdlinkError } from '../core/errors.ts';

export { errorBody, type ErrorBody } from '../web/error-body.ts';

/**
 * Hono `onError` handler rendering the envelope.
 * @example app.onError(onError)
 */
export function onError(err: Error, c: Context): Response {
  const known = logged(err, c.req.method, c.req.path);
  return c.json(errorBody(known), known.status);
}

/**
 * The envelope of `err` as `onError` renders it, for a handler reached without Hono (the proxy's
 * OpenAI-shaped answers are proxy/exchange/errors.ts's errorResponse).
 * @example return envelopeResponse(error, 'POST', '/v1/instances/refresh');
 */
export function envelopeResponse(err: Error, method: string, path: string): Response {
  const known = logged(err, method, path);
  return new Response(JSON.stringify(errorBody(known)), { status: known.status, headers: JSON_HEADERS });
}

/** What Hono's `c.json` writes. */
const JSON_HEADERS = { 'content-type': 'application/json' };

/** `err` as a PdlinkError, logged as the envelope's contract says. */
function logged(err: Error, method: string, path: string): PdlinkError {
  const known = asPdlinkError(err);
  if (known.code === 'client_closed') console.warn(`pdlink: ${method} ${path}: ${known.message}`);
  if (known.status >= 500 && known.code === 'internal') {
    console.error('pdlink: unhandled error', err);
  }
  return known;
}

/** Hono `notFound` handler with the same envelope. */
export function onNotFound(c: Context): Response {
  const err = errors.notFound(`${c.req.method} ${new URL(c.req.url).pathname}`);
  return c.json(errorBody(err), err.status);
}
