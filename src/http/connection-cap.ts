/**
 * A cap on the requests a listener serves at once, with the probes exempt. Bun.serve can neither
 * cap nor count open sockets (it accepts while descriptors last), but it counts requests in
 * flight (`server.pendingRequests`); idle keep-alive sockets are closed by its `idleTimeout`. So
 * the cap counts connections busy with a request: past it a new non-probe request is answered
 * 503 with `Retry-After` at once (cheap, and the socket is not held), while probes always answer.
 */
import { errorBody } from '../web/error-body.ts';
import { errors, type PdlinkError } from '../core/errors.ts';
import { isProbePath } from './auth.ts';

/** The platform's env (Bun's server, Deno's connection info via the seam), as far as the cap needs it. */
export interface PendingCounter {
  readonly pendingRequests: number;
}

export type ServerFetch = (request: Request, server: PendingCounter) => Response | Promise<Response>;

/** Default cap per listener: below the usual descriptor limits, above what one Coordinator serves at once. */
export const DEFAULT_MAX_CONNECTIONS = 4096;

/**
 * Wraps a listener's fetch with the cap; `render` shapes the refusal (the envelope, or OpenAI's on the inference listener).
 * @example Bun.serve({ fetch: capConnections(app.fetch, 4096) })
 */
export function capConnections(fetch: ServerFetch, max: number, render: (err: PdlinkError) => unknown = errorBody): ServerFetch {
  return (request, server) => {
    // pendingRequests includes this request.
    if (server.pendingRequests > max && !isProbePath(new URL(request.url).pathname)) {
      const err = errors.unavailable(`more than ${max} connections busy on this listener`);
      return Response.json(render(err), { status: 503, headers: { 'retry-after': '1' } });
    }
    return fetch(request, server);
  };
}
