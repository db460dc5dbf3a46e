/**
 * The error envelope every pdlink route answers with: `{"error", "error_type", "issues"?}` (its
 * shape is core/error-body.ts). Unknown errors are logged and rendered as a generic 500 without
 * details. A client that left mid-body is one line on stderr, no stack: it happens to every server
 * and says nothing is wrong.
 */
import type { Context } from 'hono';
import { asPdlinkError, errorBody } from '../core/error-body.ts';
import { errors } from '../core/errors.ts';

export { errorBody, type ErrorBody } from '../core/error-body.ts';

/**
 * Hono `onError` handler rendering the envelope.
 * @example app.onError(onError)
 */
export function onError(err: Error, c: Context): Response {
  const known = asPdlinkError(err);
  if (known.code === 'client_closed') console.warn(`pdlink: ${c.req.method} ${c.req.path}: ${known.message}`);
  if (known.status >= 500 && known.code === 'internal') {
    console.error('pdlink: unhandled error', err);
  }
  return c.json(errorBody(known), known.status);
}

/** Hono `notFound` handler with the same envelope. */
export function onNotFound(c: Context): Response {
  const err = errors.notFound(`${c.req.method} ${new URL(c.req.url).pathname}`);
  return c.json(errorBody(err), err.status);
}
