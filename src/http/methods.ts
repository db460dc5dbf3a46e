/**
 * pdlink's 404 and 405 (+ Allow) in its error envelope, for every listener's root app; telling the
 * two apart from the route table is core/route-methods.ts.
 */
import type { Context, Hono, NotFoundHandler } from 'hono';
import { errors } from '../core/errors.ts';
import { methodAwareNotFound } from '../web/route-methods.ts';
import { errorBody, onNotFound } from './envelope.ts';

export { allowedMethods, methodAwareNotFound, type NotFoundRenderers } from '../web/route-methods.ts';

/** The 405 in pdlink's error envelope. */
export function onMethodNotAllowed(c: Context, allow: readonly string[]): Response {
  const err = errors.methodNotAllowed(c.req.method, c.req.path, allow);
  return c.json(errorBody(err), err.status);
}

/**
 * pdlink's notFound handler for a listener's root app: 405 + Allow or 404, both in the envelope.
 * @example managementApp.notFound(notFoundOf(managementApp));
 */
export function notFoundOf(app: Hono): NotFoundHandler {
  return methodAwareNotFound(app, { notFound: onNotFound, methodNotAllowed: onMethodNotAllowed });
}

/**
 * Whether a request URL's path is exactly `path` (no query, fragment, trailing slash or escapes
 * considered: any of those leaves the request to the router). The path starts where Hono's router
 * reads it from, after the scheme and authority, so a URL this accepts is one the router would
 * match against `path` itself.
 * @example urlPathIs('http://127.0.0.1:1026/v1/instances/refresh?x=1', '/v1/instances/refresh') // true
 */
export function urlPathIs(url: string, path: string): boolean {
  const start = url.indexOf('/', url.indexOf(':') + 4);
  if (start < 0 || !url.startsWith(path, start)) return false;
  const end = start + path.length;
  if (end === url.length) return true;
  const next = url.charCodeAt(end);
  return next === 63 /* ? */ || next === 35; /* # */
}
