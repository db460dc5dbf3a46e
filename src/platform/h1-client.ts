/**
 * The legs' HTTP/1.1 client on Bun's TCP sockets: keep-alive connections pooled per origin, each
 * request and its answer handled on the event loop's own thread. Bun's fetch runs every request
 * on an HTTP thread of its own, which costs a cross-thread hand-off at each step of a leg (the
 * request out, the head in, each chunk in); on the proxy's hot path those hand-offs were about a
 * third of a proxied request's CPU (bench/results/proxy-cpu.md). It speaks only what a leg needs:
 * one POST with a body, the answer as a LegAnswer (platform.ts): status, headers and a reader of the
 * body as it arrives.
 *
 * A performance twin of fetch for the legs: h1-client.test.ts holds it to fetch's contract (what it
 * sends, what it refuses, how each failure reads), and test/hostile-engines.test.ts and
 * test/e2e-decode-kills.test.ts run the same engines through both clients and expect the same
 * outcomes. It keeps fetch's contract where the proxy
 * depends on it: an abort (platform.ts's AbortSource) rejects with its
 * reason (or fails the body's read), a refused connection fails with code ECONNREFUSED, a connection
 * lost before the answer is complete fails with ECONNRESET, redirects are not followed, header values are
 * refused as fetch refuses them. An answer it cannot frame fails with code HPE_INVALID and its
 * connection is closed.
 *
 * A request is sent once. The one exception is a pooled connection found closed when the request
 * was about to be written (not one byte of it went out): the request goes on a fresh connection.
 * A connection lost after bytes went out fails the request, even when the engine may only have
 * been closing an idle connection: it may as well have received the request and acted on it.
 * Failures that prove the request never left (the connection could not be made) are marked so
 * (platform.ts's neverSent). Pooled connections do not keep the process alive, close after
 * `idleSeconds` unused (by default below the 5 s keep-alive of uvicorn, which serves vLLM and
 * SGLang, so that pdlink, not the engine, closes an idle one), and number at most `maxIdle` over
 * every origin, the oldest idle one closed first. An answer that arrives before its request was
 * all written (the engine answered without reading the body) leaves its connection unused again.
 */
import { Conn, connectionLost, Exchange, HANDLERS, type ConnPool } from './h1-connection.ts';
import { requestOf } from './h1-request.ts';
import { markNeverSent, type AbortSource, type LegAnswer } from './platform.ts';

export interface H1ClientOptions {
  /** Idle keep-alive connections kept per origin; more are closed when their answer ends. */
  readonly maxIdlePerOrigin?: number;
  /** Idle keep-alive connections kept over every origin; past it the oldest idle one is closed. */
  readonly maxIdle?: number;
  /** A pooled connection unused this long is closed. */
  readonly idleSeconds?: number;
}

export const DEFAULT_MAX_IDLE_PER_ORIGIN = 256;
export const DEFAULT_MAX_IDLE = 1024;
export const DEFAULT_IDLE_SECONDS = 4;

/** Where a URL's requests go: its pool and the request line's parts. */
interface Target {
  readonly origin: Origin;
  readonly path: string;
}

/** The error of a connection that could not be made: the request never left. */
function notConnected(err: unknown): unknown {
  return markNeverSent(err instanceof Error ? err : Object.assign(new Error(String(err)), { code: 'ECONNREFUSED' }));
}

/**
 * Every idle connection of a client, oldest first: one Set whose insertion order is the order in
 * which they went idle, so the oldest is the first and each is added and removed in O(1).
 */
class IdleConnections {
  readonly #conns = new Set<Conn>();

  constructor(readonly max: number) {}

  add(conn: Conn): void {
    this.#conns.add(conn);
    // Past the cap the one idle longest goes (its close takes it out of here and its origin).
    if (this.#conns.size > this.max) this.#conns.values().next().value!.close();
  }

  delete(conn: Conn): void {
    this.#conns.delete(conn);
  }

  get size(): number {
    return this.#conns.size;
  }
}

/** The connections to one host and port. */
class Origin implements ConnPool {
  readonly hostname: string;
  readonly port: number;
  /** The request head's Host line. */
  readonly hostLine: string;
  readonly #idle: Conn[] = [];
  readonly #maxIdle: number;
  readonly #idleSeconds: number;
  #allIdle: IdleConnections;

  constructor(hostname: string, port: number, host: string, maxIdle: number, idleSeconds: number, allIdle: IdleConnections) {
    this.hostname = hostname;
    this.port = port;
    this.hostLine = `host: ${host}\r\n`;
    this.#maxIdle = maxIdle;
    this.#idleSeconds = idleSeconds;
    this.#allIdle = allIdle;
  }

  /** An idle connection, taken out of the pool, or undefined. */
  take(): Conn | undefined {
    const conn = this.#idle.pop();
    if (conn === undefined) return undefined;
    conn.idle = false;
    this.#allIdle.delete(conn);
    conn.socket!.timeout(0);
    conn.socket!.ref();
    return conn;
  }

  async open(): Promise<Conn> {
    const conn = new Conn(this);
    const socket = await Bun.connect<Conn>({ hostname: this.hostname, port: this.port, data: conn, socket: HANDLERS });
    conn.socket = socket;
    socket.setNoDelay(true);
    return conn;
  }

  park(conn: Conn): void {
    if (this.#idle.length >= this.#maxIdle) {
      conn.close();
      return;
    }
    conn.idle = true;
    conn.socket!.timeout(this.#idleSeconds);
    // A pooled connection must not keep the process running.
    conn.socket!.unref();
    this.#idle.push(conn);
    this.#allIdle.add(conn);
  }

  get idleCount(): number {
    return this.#idle.length;
  }

  /** The client's cap over every origin changed (this origin's idle connections were closed). */
  share(allIdle: IdleConnections): void {
    this.#allIdle = allIdle;
  }

  forget(conn: Conn): void {
    if (!conn.idle) return;
    conn.idle = false;
    this.#allIdle.delete(conn);
    const at = this.#idle.indexOf(conn);
    if (at >= 0) this.#idle.splice(at, 1);
  }

  closeIdle(): void {
    for (const conn of this.#idle.splice(0)) {
      conn.idle = false;
      this.#allIdle.delete(conn);
      conn.close();
    }
  }
}

/** URLs whose parse is kept. */
const MAX_TARGETS = 16_384;

/**
 * A pool of keep-alive connections per origin and the requests the legs send over them.
 * @example const res = await client.post('http://10.0.0.5:1025/v1/completions', headers, body, signal);
 */
export class H1Client {
  readonly #targets = new Map<string, Target>();
  readonly #origins = new Map<string, Origin>();
  readonly #maxIdle: number;
  readonly #idleSeconds: number;
  #allIdle: IdleConnections;

  constructor(options: H1ClientOptions = {}) {
    this.#maxIdle = options.maxIdlePerOrigin ?? DEFAULT_MAX_IDLE_PER_ORIGIN;
    this.#idleSeconds = options.idleSeconds ?? DEFAULT_IDLE_SECONDS;
    this.#allIdle = new IdleConnections(options.maxIdle ?? DEFAULT_MAX_IDLE);
  }

  /**
   * Changes the cap on idle connections over every origin; connections idle beyond it are closed now.
   * @example client.limitIdle(256);
   */
  limitIdle(max: number): void {
    if (max === this.#allIdle.max) return;
    this.#allIdle = new IdleConnections(max);
    // The origins keep their own lists: closing every idle one is simpler than re-keying them.
    this.closeIdle();
    for (const origin of this.#origins.values()) origin.share(this.#allIdle);
  }

  /**
   * POSTs `body` (UTF-8) to an `http:` URL with `headers`; resolves with the answer once its head
   * arrives. Rejects with a TypeError for a URL or header fetch would refuse.
   */
  post(url: string, headers: Readonly<Record<string, string>>, body: string, abort?: AbortSource): Promise<LegAnswer> {
    let request: string | Uint8Array;
    let target: Target;
    try {
      target = this.#target(url);
      request = requestOf(target.path, target.origin.hostLine, headers, body);
    } catch (err) {
      return Promise.reject(err);
    }
    if (abort?.aborted) return Promise.reject(abort.reason);
    const origin = target.origin;
    let resent = false;
    for (let pooled = origin.take(); pooled !== undefined; pooled = origin.take()) {
      const sent = this.#exchange(pooled, request, abort, resent);
      if (sent !== undefined) return sent;
      // Found closed before one byte was written: the request never left, and may go on another.
      pooled.close();
      resent = true;
    }
    return this.#connected(origin, request, abort, resent);
  }

  /** A request on a new connection; an abort while it connects rejects at once, as fetch does. */
  #connected(origin: Origin, request: string | Uint8Array, abort: AbortSource | undefined, resent: boolean): Promise<LegAnswer> {
    return new Promise<LegAnswer>((resolve, reject) => {
      let settled = false;
      const onAbort = (): void => {
        settled = true;
        reject(abort!.reason);
      };
      abort?.add(onAbort);
      origin.open().then(
        (conn) => {
          abort?.remove(onAbort);
          if (settled) {
            conn.close();
            return;
          }
          const sent = this.#exchange(conn, request, abort, resent);
          if (sent !== undefined) sent.then(resolve, reject);
          else {
            conn.close();
            reject(markNeverSent(connectionLost('the engine closed the connection before the request was written')));
          }
        },
        (err: unknown) => {
          abort?.remove(onAbort);
          if (!settled) reject(notConnected(err));
        },
      );
    });
  }

  /** Idle connections in the pool, over every origin. */
  get idleConnections(): number {
    let idle = 0;
    for (const origin of this.#origins.values()) idle += origin.idleCount;
    return idle;
  }

  /** Closes every idle pooled connection (those in use close when their answer ends). */
  closeIdle(): void {
    for (const origin of this.#origins.values()) origin.closeIdle();
  }

  /** The request on `conn`, or undefined when `conn` was found closed and nothing was written. */
  #exchange(conn: Conn, request: string | Uint8Array, abort: AbortSource | undefined, resent: boolean): Promise<LegAnswer> | undefined {
    let exchange!: Exchange;
    const answer = new Promise<LegAnswer>((resolve, reject) => {
      conn.keepAlive = true;
      // Reset here, not when the connection was pooled: bytes after an answer's end, in the same
      // piece or later, must find the parser done and retire the connection.
      conn.parser.reset();
      exchange = new Exchange(conn, abort, resolve, reject);
      exchange.resent = resent;
      conn.exchange = exchange;
    });
    if (conn.send(request)) return answer;
    exchange.unsent();
    return undefined;
  }

  #target(url: string): Target {
    let target = this.#targets.get(url);
    if (target !== undefined) return target;
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:') throw new TypeError(`the socket client sends only http: URLs, not ${parsed.protocol}`);
    const hostname = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
    const port = parsed.port === '' ? 80 : Number(parsed.port);
    const key = `${hostname}:${port}`;
    let origin = this.#origins.get(key);
    if (origin === undefined) {
      origin = new Origin(hostname, port, parsed.host, this.#maxIdle, this.#idleSeconds, this.#allIdle);
      this.#origins.set(key, origin);
    }
    target = { origin, path: `${parsed.pathname}${parsed.search}` };
    // A proxy sends to a few URLs per instance; past this many, start over (parsing again is cheap),
    // and forget the origins with nothing pooled (a connection in use keeps its own).
    if (this.#targets.size >= MAX_TARGETS) {
      this.#targets.clear();
      for (const [k, o] of this.#origins) if (o.idleCount === 0 && o !== origin) this.#origins.delete(k);
    }
    this.#targets.set(url, target);
    return target;
  }
}
