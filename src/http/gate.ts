/**
 * A check in front of a listener's routes (a token, an API key, a rate limit) written on a plain
 * request, so that the same check runs as Hono middleware and in a handler that answers a hot path
 * before Hono's dispatch (apps/coordinator.ts): one instance, one state (a rate limit's buckets),
 * whichever way a request came.
 */
import type { MiddlewareHandler } from 'hono';

/** The refusal to answer with, or undefined when the request may go on. `env` is the runtime's per-request value, as Hono's env. */
export type Gate = (request: Request, env: unknown, path: string) => Response | undefined;

/**
 * The gate as Hono middleware.
 * @example app.use('*', gateMiddleware(inferenceGate(options)));
 */
export function gateMiddleware(gate: Gate): MiddlewareHandler {
  return async (c, next) => gate(c.req.raw, c.env, c.req.path) ?? next();
}
