/**
 * The body of pdlink's error envelope, `{"error", "error_type", "issues"?}`, as a pure function of
 * the error, so every listener renders errors alike whether it mounts pdlink's HTTP layer (the
 * envelope in http/envelope.ts) or not (the engine simulator's control routes).
 */
import { errors, PdlinkError } from '../core/errors.ts';

export interface ErrorBody {
  error: string;
  error_type: string;
  issues?: { path: string; message: string }[];
}

/**
 * Envelope of a PdlinkError; `issues` only when there are any.
 * @example errorBody(errors.notFound('GET /x')) // { error: 'GET /x not found', error_type: 'NotFound' }
 */
export function errorBody(err: PdlinkError): ErrorBody {
  const body: ErrorBody = { error: err.message, error_type: err.errorType };
  if (err.issues.length > 0) body.issues = err.issues.map((i) => ({ path: i.path, message: i.message }));
  return body;
}

/**
 * The PdlinkError an error thrown anywhere renders as: itself, a framework's HTTP exception with its
 * 4xx status kept, or a generic 500 that tells the client nothing of the server's internals.
 * @example asPdlinkError(new Error('boom')).status // 500
 */
export function asPdlinkError(err: Error): PdlinkError {
  if (err instanceof PdlinkError) return err;
  // Hono's own HTTPException (e.g. from its body-limit middleware) carries a status.
  const status = (err as { status?: unknown }).status;
  if (status === 413) return new PdlinkError('payload_too_large', err.message || 'request body too large');
  if (typeof status === 'number' && status >= 400 && status < 500) return errors.badRequest(err.message);
  return errors.internal(err);
}
