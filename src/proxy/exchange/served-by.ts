/**
 * The response headers naming the instances that served a request, so a client or a benchmark can
 * tell which P prefilled and which D decoded its answer (`pdlink bench` records them per request).
 */
import type { PickedPair } from './ports.ts';

export const PREFILL_INSTANCE_HEADER = 'x-pdlink-prefill';
export const DECODE_INSTANCE_HEADER = 'x-pdlink-decode';

/**
 * Adds the instance ids of `pair` to the client's response and returns it.
 * @example return servedBy(new Response(stream, { headers }), pair);
 */
export function servedBy(res: Response, pair: PickedPair): Response {
  // On the local path D prefilled the prompt too: it is named as both.
  res.headers.set(PREFILL_INSTANCE_HEADER, String(pair.path === 'local' ? pair.d.id : pair.p.id));
  res.headers.set(DECODE_INSTANCE_HEADER, String(pair.d.id));
  return res;
}
