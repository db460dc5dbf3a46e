/**
 * What differs between Bun and Deno for pdlink, as one interface: serving a fetch handler, reading
 * a request's peer address, lifting a request's idle timeout, posting to an engine over plain HTTP,
 * fetching with a client TLS config, a response body its source pushes into, and answering with a
 * file. `bun.ts` and `deno.ts` implement it; `index.ts` picks one at start, so nothing above this
 * folder names a runtime.
 */
import type { ClientTlsOptions, ServerTlsOptions } from './tls-options.ts';

/**
 * A listener's handler: the platform's per-request value (Bun's server, Deno's connection info) is
 * passed on as Hono's env, so `peerAddress` and `keepOpen` can read it. `pendingRequests` counts
 * the requests in flight on the listener, this one included.
 */
export type ServeHandler = (request: Request, env: ServeEnv) => Response | Promise<Response>;

/** A handler of POSTs to one exact path (see ServeSpec.posts). */
export type PostRoute = (request: Request, env: unknown) => Response | Promise<Response>;

/** POST handlers by exact path, e.g. `{ '/v1/instances/refresh': refresh }`. */
export type PostRoutes = Readonly<Record<string, PostRoute>>;

/** What every runtime's env offers the handler; the rest stays the runtime's own. */
export interface ServeEnv {
  readonly pendingRequests: number;
}

export interface ServeSpec {
  readonly hostname: string;
  /** 0 = any free port. */
  readonly port: number;
  readonly fetch: ServeHandler;
  /**
   * POSTs to these exact paths (any query) that the runtime may send to their handler itself,
   * without `fetch` building and matching the URL (Bun's routes). `fetch` must answer them the same:
   * a platform without such routing (Deno) sends every request to `fetch`.
   */
  readonly posts?: PostRoutes;
  readonly tls?: ServerTlsOptions;
  /** Seconds a keep-alive connection may stay idle, where the runtime lets it be set. */
  readonly idleTimeoutSeconds: number;
}

export interface Served {
  /** The port bound (the chosen one when the spec said 0). */
  readonly port: number;
  /** Stops accepting and closes every connection, open streams included. */
  stop(): Promise<void>;
}

/**
 * What aborts a leg, without an EventTarget: proxy/legs/abort-scope.ts's AbortScope, or an AbortSignal
 * through abortSourceOf. Adding and removing an `abort` listener on an AbortSignal per leg, and an
 * AbortController per leg, were a visible share of the proxy's CPU; a scope is a flag and a list.
 */
export interface AbortSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** Calls `listener` once when it aborts (never if it already has: check `aborted` first). */
  add(listener: () => void): void;
  remove(listener: () => void): void;
  /** An AbortSignal that aborts with it, for APIs that take one (fetch). */
  readonly signal: AbortSignal;
}

/**
 * An AbortSignal as an AbortSource.
 * @example await client.post(url, headers, body, abortSourceOf(controller.signal));
 */
export function abortSourceOf(signal: AbortSignal): AbortSource {
  return {
    get aborted() {
      return signal.aborted;
    },
    get reason() {
      return signal.reason;
    },
    add: (listener) => signal.addEventListener('abort', listener, { once: true }),
    remove: (listener) => signal.removeEventListener('abort', listener),
    signal,
  };
}

/** A reader of an answer's body, one chunk at a time (what a ReadableStream's reader offers, no more). */
export interface BodyReader {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
  cancel(reason?: unknown): Promise<void>;
  /**
   * Hands every chunk not read yet to `sink` as it arrives, then the end or the failure, instead of
   * reads: no promise per chunk. Only a reader that sees its chunks arrive has it (the socket
   * client's); after it, only `cancel`, `pause` and `resume` may be called.
   */
  sinkTo?(sink: BodySink): void;
  /**
   * Stops reading from the engine until `resume` (the sink's own reader is behind): the engine
   * sees TCP backpressure instead of this process buffering its answer. Only the socket client's.
   */
  pause?(): void;
  resume?(): void;
}

/** Where a body's chunks go when they are handed over as they arrive (BodyReader.sinkTo). */
export interface BodySink {
  chunk(bytes: Uint8Array): void;
  end(): void;
  fail(err: unknown): void;
}

/** Where a pushed body's chunks go (Platform.pushedBody); nothing is called after close() or error(). */
export interface BodyOut {
  /**
   * Takes the chunk; false when the body's reader is behind (the chunk was taken all the same):
   * the source should stop producing until its `drained` is called.
   */
  write(chunk: Uint8Array): boolean;
  /** Ends the body once what was written has gone. */
  close(): void;
  /** Fails the body: its reader gets `err`, an HTTP client a cut connection. */
  error(err: unknown): void;
}

/** A body that pushes its chunks as they come rather than being asked for each (Platform.pushedBody). */
export interface PushedSource {
  /** Called once, when the body is first wanted: from then on, chunks go to `out`. */
  start(out: BodyOut): void;
  /** The body's reader went away (an HTTP client that disconnected). */
  cancel(reason: unknown): void;
  /** The reader caught up after a `write` answered false. */
  drained(): void;
}

/**
 * An engine's answer to a leg as the proxy reads it: fetch's `Response` (through `answerOf`) or the
 * socket client's own, which needs no `Response` and no JS stream per leg.
 */
export interface LegAnswer {
  readonly status: number;
  readonly headers: Pick<Headers, 'get'>;
  /** Whether a body follows the head. */
  readonly hasBody: boolean;
  /** The body's reader; taken once, and only when `hasBody`. */
  reader(): BodyReader;
  /**
   * The body's reader, with `watch` told of each chunk as it arrives and of the end, and asked what
   * a failure is to become (the proxy's idle clock, idle.ts); instead of `reader()`. Only an answer
   * that sees its chunks arrive has it (the socket client's); fetch's is watched through its reader.
   */
  watched?(watch: BodyWatch): BodyReader;
  /**
   * True when the request went out on a fresh connection because the pooled one it was given was
   * found closed before any byte of it was written (the socket client's; see h1-client.ts).
   */
  readonly resent?: boolean;
}

/** What watches a body as it arrives: the proxy's idle clock. */
export interface BodyWatch {
  /** A chunk arrived. */
  touch(): void;
  /** The body ended (or was given up). */
  stop(): void;
  /** What a failure of the body is to be reported as. */
  failure(err: unknown): unknown;
  /** Reading is paused (true) or goes on (false): the engine's silence meanwhile is not its own. */
  held(on: boolean): void;
}

/**
 * Marks `err` as the failure of a request that provably never reached its engine: the connection
 * could not be made, or was found closed before any byte of the request was written.
 * @example throw markNeverSent(Object.assign(new Error('closed'), { code: 'ECONNRESET' }));
 */
export function markNeverSent<E>(err: E): E {
  if (typeof err === 'object' && err !== null && Object.isExtensible(err)) (err as { neverSent?: boolean }).neverSent = true;
  return err;
}

/**
 * Whether a leg's failure proves that its request never reached the engine, so that sending it
 * elsewhere cannot do anything twice: a refused connection (either client: the engine accepted
 * nothing), or a failure the socket client marked (markNeverSent). Anything else may have reached
 * the engine, which may have acted on it.
 * @example if (neverSent(err)) handOver();
 */
export function neverSent(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  return (err as { code?: unknown }).code === 'ECONNREFUSED' || (err as { neverSent?: unknown }).neverSent === true;
}

/**
 * fetch's answer as a LegAnswer.
 * @example const answer = answerOf(await fetch(url, init));
 */
export function answerOf(res: Response): LegAnswer {
  return {
    status: res.status,
    headers: res.headers,
    hasBody: res.body !== null,
    reader: () => res.body!.getReader(),
  };
}

export interface Platform {
  readonly name: 'bun' | 'deno';
  /** Starts a listener; throws when the address cannot be bound or a TLS setting cannot be enforced. */
  serve(spec: ServeSpec): Served;
  /** The client's address as the listener saw it, from the env the runtime passed with `request`. */
  peerAddress(request: Request, env: unknown): string | undefined;
  /** Lifts the listener's idle timeout for this request (a long stream), where the runtime has one. */
  keepOpen(request: Request, env: unknown): void;
  /**
   * POSTs `body` to a plain `http:` URL, resolving with the answer once its head arrives, as
   * `fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal })` does (its answer
   * read as a LegAnswer), aborted when `abort` aborts. Bun sends it
   * over sockets of its own pool on the event loop's thread (h1-client.ts), Deno by fetch.
   */
  postPlain(url: string, headers: Readonly<Record<string, string>>, body: string, abort: AbortSource): Promise<LegAnswer>;
  /**
   * Caps the idle keep-alive connections postPlain keeps over every origin (process-wide; the
   * oldest idle one is closed past it), where the runtime's client is pdlink's own.
   */
  limitIdleConnections(max: number): void;
  /** The `fetch` init fields that make an https call verify with `tls.ca` and present `tls.cert`. */
  tlsInit(tls: ClientTlsOptions): RequestInit;
  /**
   * A response body fed by `source` as its chunks come (the proxy's relay of D's stream). Bun's is a
   * direct stream, which Bun.serve writes out as written: no queue, no reader and no promise per
   * chunk, and no lock released (with two errors made) per response. Deno's is a standard stream.
   */
  pushedBody(source: PushedSource): ReadableStream<Uint8Array>;
  /** The file at `url` as a response body with `headers`, or undefined when there is no such file. */
  fileResponse(url: URL, headers: Record<string, string>): Promise<Response | undefined>;
  /** Server TLS settings this runtime cannot enforce; a listener asking for one must not start. */
  unsupportedServerTls(tls: ServerTlsOptions): (keyof ServerTlsOptions)[];
  /** Client TLS settings this runtime cannot enforce; a client asking for one must not be built. */
  unsupportedClientTls(tls: ClientTlsOptions): (keyof ClientTlsOptions)[];
}
