/**
 * The Hono side of reading a JSON request body: the checks themselves live in
 * core/json-request.ts (on a standard Request, so listeners without Hono share them).
 */
import type { Context } from 'hono';
import { readJsonRequest, type ReadJsonOptions } from '../web/json-request.ts';

export type { ReadJsonOptions } from '../web/json-request.ts';

/**
 * Returns the parsed body, or throws the PdlinkError the route should answer with.
 * @example const body = await readJsonBody(c, { limitBytes: 1 << 20 });
 */
export function readJsonBody(c: Context, options: ReadJsonOptions): Promise<unknown> {
  return readJsonRequest(c.req.raw, options);
}
