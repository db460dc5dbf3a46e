/**
 * Sending a leg: every P and D leg goes out through `sendLeg`, which sends it once more when a
 * stale keep-alive connection lost it. The legs' clients (the socket client on Bun, fetch for https
 * and on Deno) pool connections per origin and drop a pooled connection that the engine closed
 * while it sat idle, so an idle close seen in time costs nothing. But when the engine's close
 * crosses the next request on the wire (its idle timeout fires just as the request is written),
 * the request fails with ECONNRESET and is not tried again. Such a request never reached the
 * engine, so it is sent once more, at once, to the same instance, on a fresh connection; the
 * instance is not blamed for it.
 *
 * fetch tells neither whether the connection was reused nor whether part of a status line had
 * arrived before the close: a connection lost before the response head was complete is reported
 * the same way in every case, and the socket client reports it as fetch does, so one rule serves
 * both. The retry is limited to what can be known: the loss came before the answer's head (never
 * once the head arrived, and never twice), and the origin had answered this process before, so a
 * pooled connection may have carried the request.
 */
import type { AbortParent } from './abort-scope.ts';
import type { LegHeaders } from './legs.ts';
import { postLeg, type LegClient } from './upstream.ts';
import type { LegAnswer } from '../runtime/runtime.ts';

/** Error codes of a connection lost under a request (closed, reset, broken pipe), as opposed to one never made. */
const CONNECTION_LOST: ReadonlySet<string> = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** Origins remembered at most; the oldest are forgotten first (an instance that comes back is simply new again). */
export const MAX_REMEMBERED_ORIGINS = 4096;

/**
 * True when `error` is a connection lost under a request rather than one that could not be made.
 * @example isConnectionLoss(err) // true for ECONNRESET, false for ECONNREFUSED
 */
export function isConnectionLoss(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && CONNECTION_LOST.has(code);
}

/** The origins that answered this process, i.e. those Bun's pool may hold a keep-alive connection to. */
export class PooledOrigins {
  /** Origin → when it last answered (a count of answers): one map write per leg keeps the order. */
  readonly #origins = new Map<string, number>();
  #answers = 0;
  readonly #capacity: number;
  /**
   * Leg URL → its origin. A proxy sends to a few URLs per instance over and over; parsing each
   * one with `new URL` twice per request was a measurable part of the per-request cost.
   */
  readonly #originOf = new Map<string, string>();

  /**
   * @example const origins = new PooledOrigins();
   */
  constructor(capacity = MAX_REMEMBERED_ORIGINS) {
    this.#capacity = capacity;
  }

  /**
   * An answer arrived from `url`'s origin: its connection goes back to the pool once the body is read.
   * @example origins.answered(url);
   */
  answered(url: string): void {
    this.#origins.set(this.#origin(url), ++this.#answers);
    // Past capacity (a new origin, so rare), the one that answered longest ago is forgotten.
    if (this.#origins.size > this.#capacity) this.#forgetOldest();
  }

  #forgetOldest(): void {
    let oldest: string | undefined;
    let at = Infinity;
    for (const [origin, answeredAt] of this.#origins) {
      if (answeredAt < at) {
        at = answeredAt;
        oldest = origin;
      }
    }
    if (oldest !== undefined) this.#origins.delete(oldest);
  }

  /**
   * Whether a request to `url` may have gone out on a pooled connection.
   * @example if (origins.mayReuse(url)) ...
   */
  mayReuse(url: string): boolean {
    return this.#origins.has(this.#origin(url));
  }

  #origin(url: string): string {
    let origin = this.#originOf.get(url);
    if (origin === undefined) {
      origin = new URL(url).origin;
      // Bounded like the origins themselves: past it, start over (URLs are cheap to parse again).
      if (this.#originOf.size >= 4 * this.#capacity) this.#originOf.clear();
      this.#originOf.set(url, origin);
    }
    return origin;
  }
}

/**
 * Sends one leg (see postLeg), sending it once more to the same instance, after calling
 * `onStaleRetry`, when a possibly pooled connection was lost before any response; the second
 * failure, if any, is the leg's failure.
 * `idleMs` is the engine's silence that fails the leg (http_timeout_seconds); `client` says which
 * client the leg goes over (the proxy settings' `engineTls` and `engineClient`).
 * @example const res = await sendLeg(url, headers, text, signal, origins, () => metrics.staleRetried('decode'));
 */
export async function sendLeg(
  url: string,
  headers: LegHeaders,
  body: string,
  signal: AbortParent,
  origins: PooledOrigins,
  onStaleRetry: () => void,
  idleMs = Infinity,
  client: LegClient = {},
): Promise<LegAnswer> {
  let response: LegAnswer;
  try {
    response = await postLeg(url, headers, body, signal, idleMs, client);
  } catch (err) {
    if (signal.aborted || !isConnectionLoss(err) || !origins.mayReuse(url)) throw err;
    onStaleRetry();
    response = await postLeg(url, headers, body, signal, idleMs, client);
  }
  origins.answered(url);
  return response;
}
