/**
 * The platform seam on Bun: Bun.serve (TLS with client certificates and CRLs, an idle timeout it
 * can lift per request), plain-HTTP posts on Bun's TCP sockets, Bun's `tls` fetch option and Bun.file.
 */
import type { ClientTlsOptions } from './tls-options.ts';
import { H1Client } from './h1-client.ts';
import { defaultIdleCap } from './fd-limit.ts';
import type { BodyOut, PostRoutes, PushedSource, Platform, Served, ServeSpec } from './platform.ts';

/** Bun's idle timeout is at most 255 seconds. */
const MAX_IDLE_SECONDS = 255;

/** Bun's server as the handler sees it: the env Hono gets under Bun.serve. */
interface BunServerEnv {
  requestIP?(request: Request): { address: string } | null;
  timeout?(request: Request, seconds: number): void;
}

function serve(spec: ServeSpec): Served {
  const server = Bun.serve({
    hostname: spec.hostname,
    port: spec.port,
    // Bun passes its server, which counts `pendingRequests` itself.
    fetch: spec.fetch as unknown as (request: Request, server: Bun.Server<undefined>) => Response | Promise<Response>,
    // Matched on the path by Bun itself; every other method and path goes to fetch.
    ...(spec.posts === undefined ? {} : { routes: postRoutes(spec.posts) }),
    idleTimeout: Math.min(MAX_IDLE_SECONDS, spec.idleTimeoutSeconds),
    ...(spec.tls === undefined ? {} : { tls: spec.tls }),
  });
  return { port: server.port ?? spec.port, stop: () => server.stop(true) };
}

/** The seam's exact POST routes as Bun's routes. */
function postRoutes(
  posts: PostRoutes,
): Record<string, { POST: (request: Request, server: Bun.Server<undefined>) => Response | Promise<Response> }> {
  const routes: Record<string, { POST: (request: Request, server: Bun.Server<undefined>) => Response | Promise<Response> }> = {};
  for (const [path, handler] of Object.entries(posts)) routes[path] = { POST: handler };
  return routes;
}

/**
 * A pushed body as Bun's direct stream: the source starts at the first pull and writes into the
 * destination's own buffer (flushed by Bun at the end of the tick). A reader pulls again after each
 * read; the source has started by then and keeps writing, so a later pull does nothing.
 */
class DirectBody implements BodyOut {
  readonly type = 'direct';
  #controller: ReadableStreamDirectController | undefined;

  constructor(private readonly source: PushedSource) {}

  pull(controller: ReadableStreamDirectController): void {
    if (this.#controller !== undefined) return;
    this.#controller = controller;
    this.source.start(this);
  }

  cancel(reason: unknown): void {
    this.source.cancel(reason);
  }

  write(chunk: Uint8Array): boolean {
    // A pending promise says the destination is full (the chunk was taken either way); it settles
    // once the client has read enough, which is when the source may go on.
    const written = this.#controller!.write(chunk);
    if (typeof written === 'number') return true;
    written.then(this.#drained, ignore);
    return false;
  }

  readonly #drained = (): void => this.source.drained();

  close(): void {
    this.#controller!.close();
  }

  error(err: unknown): void {
    this.#controller!.close(err instanceof Error ? err : new Error(String(err)));
  }
}

function ignore(): void {}

/** The process's plain-HTTP client: one pool of keep-alive connections per origin, as fetch has. */
const plainClient = new H1Client({ maxIdle: defaultIdleCap() });

export const bunPlatform: Platform = {
  name: 'bun',
  serve,
  peerAddress: (request, env) => (env as BunServerEnv | undefined)?.requestIP?.(request)?.address,
  keepOpen: (request, env) => {
    const server = env as BunServerEnv | undefined;
    if (typeof server?.timeout === 'function') server.timeout(request, 0);
  },
  postPlain: (url, headers, body, abort) => plainClient.post(url, headers, body, abort),
  limitIdleConnections: (max) => plainClient.limitIdle(max),
  // Bun pools https connections per origin and TLS options as it does plain ones, so keep-alive holds.
  tlsInit: (tls: ClientTlsOptions) => ({ tls }) as RequestInit,
  pushedBody: (source) => new ReadableStream(new DirectBody(source)) as ReadableStream<Uint8Array>,
  fileResponse: async (url, headers) => {
    const file = Bun.file(url);
    if (!(await file.exists())) return undefined;
    return new Response(file, { headers });
  },
  unsupportedServerTls: () => [],
  unsupportedClientTls: () => [],
};
