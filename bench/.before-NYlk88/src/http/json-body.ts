/**
 * The one validation middleware of pdlink's JSON routes, in Hono's validator idiom: it reads the
 * body with every check of core/json-request.ts (content type, size, depth, exact integers), checks
 * it with a Valibot schema (or the route's own check), and leaves the typed result for the handler
 * as `c.req.valid('json')`. A refused body never reaches the handler; its error is thrown for the
 * envelope to render, with the status the route's contract names (`refuse`).
 */
import type { Env, MiddlewareHandler } from 'hono';
import type * as v from 'valibot';
import { errors } from '../core/errors.ts';
import { parseOrRefuse, type Refusal } from '../schema/issues.ts';
import { readJsonBody } from './body.ts';

export interface JsonBodyOptions {
  /** Largest accepted body in bytes. */
  readonly limitBytes: number;
  /** The error of a body off the schema; default `errors.unprocessable` (422). */
  readonly refuse?: Refusal;
  /** Refuse anything but a JSON object at the top, with the same error. */
  readonly object?: boolean;
  /** Told of every refused body (unreadable or off the schema) before its error is thrown; for metrics. */
  readonly onRefused?: (error: unknown) => void;
}

/** What the middleware leaves for the handler: `c.req.valid('json')` is `T`. */
export type JsonInput<T> = { in: { json: unknown }; out: { json: T } };

/**
 * Middleware validating the JSON body against `schema`, or with `check` (which throws the error to
 * answer with), for a route whose handler reads `c.req.valid('json')`.
 * @example app.post('/v1/links/link', jsonBody(LinkRequestSchema, { limitBytes }), (c) => link(c.req.valid('json')));
 */
export function jsonBody<S extends v.GenericSchema>(
  schema: S,
  options: JsonBodyOptions,
): MiddlewareHandler<Env, string, JsonInput<v.InferOutput<S>>>;
export function jsonBody<T>(check: (body: unknown) => T, options: JsonBodyOptions): MiddlewareHandler<Env, string, JsonInput<T>>;
export function jsonBody(schemaOrCheck: v.GenericSchema | ((body: unknown) => unknown), options: JsonBodyOptions): MiddlewareHandler {
  const refuse = options.refuse ?? errors.unprocessable;
  const check =
    typeof schemaOrCheck === 'function'
      ? schemaOrCheck
      : (body: unknown) => parseOrRefuse(schemaOrCheck, body, refuse, { object: options.object === true });
  return async (c, next) => {
    let value: unknown;
    try {
      value = check(await readJsonBody(c, { limitBytes: options.limitBytes }));
    } catch (error) {
      options.onRefused?.(error);
      throw error;
    }
    // Hono keeps validated data per target; a JSON body is any JSON value, the store wants an object.
    c.req.addValidatedData('json', value as object);
    await next();
  };
}
