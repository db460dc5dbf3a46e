/**
 * The error envelope every pdlink route answers with: `{"error", "error_type", "issues"?}`.
 * Unknown errors are logged and rendered as a generic 500 without details. A client that left
 * mid-body is one line on stderr, no stack: it happens to every server and says nothing is wrong.
 */
import type { Context } from 'hono';
import { errors, PdlinkError } from '../core/errors.ts';

export interface ErrorBody {
  error: string;
  error_type: string;
  issues?: { path: string; message: string }[];
}

/** Envelope of a PdlinkError; `issues` only when there are any. */
export function errorBody(err: PdlinkError): ErrorBody {
  const body: ErrorBody = { error: err.message, error_type: err.errorType };
  if (err.issues.length > 0) body.issues = err.issues.map((i) => ({ path: i.path, message: i.message }));
  return body;
}

/**
 * Hono `onError` handler rendering the envelope.
 * @example app.onError(onError)
 */
export function onError(err: Error, c: Context): Response {
  const known = err instanceof PdlinkError ? err : toPdlinkError(err);
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

function toPdlinkError(err: Error): PdlinkError {
  // Hono's own HTTPException (e.g. from its body-limit middleware) carries a status.
  const status = (err as { status?: unknown }).status;
  if (status === 413) return new PdlinkError('payload_too_large', err.message || 'request body too large');
  if (typeof status === 'number' && status >= 400 && status < 500) return errors.badRequest(err.message);
  return errors.internal(err);
}
