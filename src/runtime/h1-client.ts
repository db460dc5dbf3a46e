/**
 * The legs' HTTP/1.1 client on Bun's TCP sockets: keep-alive connections pooled per origin, each
 * request and its answer handled on the event loop's own thread. Bun's fetch runs every request
 * on an HTTP thread of its own, which costs a cross-thread hand-off at each step of a leg (the
 * request out, the head in, each chunk in); on the proxy's hot path those hand-offs were about a
 * third of a proxied request's CPU (bench/results/proxy-cpu.md). It speaks only what a leg needs:
 * one POST with a body, the answer as a LegAnswer (runtime.ts): status, headers and a reader of the
 * body as it arrives.
 *
 * It keeps fetch's contract where the proxy depends on it: an abort (runtime.ts's AbortSource) rejects with its
 * reason (or fails the body's read), a refused connection fails with code ECONNREFUSED, a connection
 * lost before the answer is complete fails with ECONNRESET (send-leg.ts sends such a leg once more
 * when the connection may have been a pooled one), redirects are not followed, header values are
 * refused as fetch refuses them. An answer it cannot frame fails with code HPE_INVALID and its
 * connection is closed. Pooled connections do not keep the process alive, and close after
 * `idleSeconds` unused.
 */
import type { Socket, SocketHandler } from 'bun';
import { H1Parser, H1ParseError, type H1Events, type H1Head } from './h1-parse.ts';
import type { AbortSource, BodyReader, BodyWatch, LegAnswer } from './runtime.ts';

export interface H1ClientOptions {
  /** Idle keep-alive connections kept per origin; more are closed when their answer ends. */
  readonly maxIdlePerOrigin?: number;
  /** A pooled connection unused this long is closed. */
  readonly idleSeconds?: number;
}

export const DEFAULT_MAX_IDLE_PER_ORIGIN = 256;
export const DEFAULT_IDLE_SECONDS = 30;

/** Where a URL's requests go: its pool and the request line's parts. */
interface Target {
  readonly origin: Origin;
  readonly path: string;
}

/** The error of a connection lost under a request, coded as fetch codes it. */
function connectionLost(message: string): Error {
  return Object.assign(new Error(message), { code: 'ECONNRESET' });
}

type ReadResult = Awaited<ReturnType<BodyReader['read']>>;
const DONE: ReadResult = Object.freeze({ done: true });

/** An answer's header fields (names in lower case), read as a `Headers` reads them. */
class AnswerHeaders implements Pick<Headers, 'get'> {
  readonly #pairs: readonly [string, string][];

  constructor(pairs: readonly [string, string][]) {
    this.#pairs = pairs;
  }

  get(name: string): string | null {
    const key = name.toLowerCase();
    let found: string | null = null;
    for (const [field, value] of this.#pairs) if (field === key) found = found === null ? value : `${found}, ${value}`;
    return found;
  }
}

/**
 * One request on a connection, from its write to the end of its answer; once the head has come,
 * also the answer itself and its body's reader. Chunks wait in a queue of their own until read:
 * no `Response` and no JS stream per leg, which were a tenth of the proxy's JS thread.
 */
class Exchange implements H1Events, LegAnswer, BodyReader {
  readonly conn: Conn;
  status = 0;
  headers: Pick<Headers, 'get'> = NO_HEADERS;
  hasBody = false;
  readonly #abort: AbortSource | undefined;
  readonly #resolve: (answer: LegAnswer) => void;
  readonly #reject: (err: unknown) => void;
  #answered = false;
  #settled = false;
  /** The body: chunks not read yet (from #next on), then its end or its error. */
  #queue: Uint8Array[] = [];
  #next = 0;
  #ended = false;
  #failure: { readonly error: unknown } | undefined;
  #waiting: { resolve: (result: ReadResult) => void; reject: (err: unknown) => void } | undefined;
  #watch: BodyWatch | undefined;
  readonly #onAbort = (): void => {
    this.fail(this.#abort!.reason);
  };

  constructor(conn: Conn, abort: AbortSource | undefined, resolve: (answer: LegAnswer) => void, reject: (err: unknown) => void) {
    this.conn = conn;
    this.#abort = abort;
    this.#resolve = resolve;
    this.#reject = reject;
    abort?.add(this.#onAbort);
  }

  head(head: H1Head): void {
    if (head.status > 599) {
      this.conn.broken(new H1ParseError(`status ${head.status}`));
      return;
    }
    this.status = head.status;
    this.headers = new AnswerHeaders(head.headers);
    this.hasBody = head.hasBody;
    this.#answered = true;
    this.conn.keepAlive = head.keepAlive;
    this.#resolve(this);
  }

  body(bytes: Uint8Array): void {
    this.#watch?.touch();
    const waiting = this.#waiting;
    if (waiting === undefined) this.#queue.push(bytes);
    else {
      this.#waiting = undefined;
      waiting.resolve({ done: false, value: bytes });
    }
  }

  end(): void {
    if (this.#settled) return;
    this.#finish();
    this.#ended = true;
    this.#watch?.stop();
    this.conn.released();
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting.resolve(DONE);
    }
  }

  /** The exchange fails with `err`: before the head the request rejects, after it the body's read does. */
  fail(err: unknown): void {
    if (this.#settled) return;
    this.#finish();
    this.conn.close();
    if (!this.#answered) {
      this.#reject(err);
      return;
    }
    // As a stream that errors: what was not read yet is dropped.
    this.#queue = [];
    this.#next = 0;
    this.#failure = { error: this.#watch === undefined ? err : this.#watch.failure(err) };
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting.reject(err);
    }
  }

  reader(): BodyReader {
    return this;
  }

  watched(watch: BodyWatch): BodyReader {
    this.#watch = watch;
    // What happened before the watch came: an end stops it, a failure becomes what it says.
    if (this.#failure !== undefined) this.#failure = { error: watch.failure(this.#failure.error) };
    else if (this.#ended) watch.stop();
    return this;
  }

  read(): Promise<ReadResult> {
    if (this.#next < this.#queue.length) {
      const value = this.#queue[this.#next++]!;
      if (this.#next === this.#queue.length) {
        this.#queue = [];
        this.#next = 0;
      }
      return Promise.resolve({ done: false, value });
    }
    if (this.#failure !== undefined) return Promise.reject(this.#failure.error);
    if (this.#ended) return Promise.resolve(DONE);
    return new Promise<ReadResult>((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  cancel(): Promise<void> {
    // The reader gave up on the answer: the rest of it is not read, so the connection goes.
    this.#watch?.stop();
    this.#queue = [];
    this.#next = 0;
    if (!this.#settled) {
      this.#finish();
      this.#ended = true;
      this.conn.close();
    }
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting.resolve(DONE);
    }
    return Promise.resolve();
  }

  #finish(): void {
    this.#settled = true;
    this.#abort?.remove(this.#onAbort);
    this.conn.exchange = undefined;
  }
}

const NO_HEADERS = new AnswerHeaders([]);

/** A keep-alive connection to one origin, carrying one exchange at a time. */
class Conn {
  readonly origin: Origin;
  socket: Socket<Conn> | undefined;
  exchange: Exchange | undefined;
  readonly parser: H1Parser;
  keepAlive = true;
  closed = false;
  idle = false;
  /** Request bytes the socket did not take yet (written on drain). */
  #unwritten: Uint8Array | undefined;

  constructor(origin: Origin) {
    this.origin = origin;
    // The parser reports to whichever exchange the connection carries at the time.
    this.parser = new H1Parser({
      head: (head) => this.exchange?.head(head),
      body: (bytes) => this.exchange?.body(bytes),
      end: () => this.exchange?.end(),
    });
  }

  send(request: string | Uint8Array): void {
    const written = this.socket!.write(request);
    if (typeof request === 'string') {
      // The socket wrote the text as UTF-8: short of that, the rest is what follows in those bytes.
      if (written < request.length || written < Buffer.byteLength(request)) {
        this.#unwritten = Buffer.from(request).subarray(Math.max(0, written));
      }
    } else if (written < request.byteLength) this.#unwritten = request.subarray(Math.max(0, written));
  }

  drained(): void {
    const rest = this.#unwritten;
    if (rest === undefined) return;
    this.#unwritten = undefined;
    this.send(rest);
  }

  data(piece: Uint8Array): void {
    if (this.exchange === undefined) {
      // Bytes nobody asked for (on an idle connection): it cannot be trusted with a request.
      this.close();
      return;
    }
    try {
      this.parser.feed(piece);
    } catch (err) {
      this.broken(err);
    }
  }

  /** The answer cannot be framed: the exchange fails with `err` and the connection goes. */
  broken(err: unknown): void {
    if (this.exchange !== undefined) this.exchange.fail(err);
    else this.close();
  }

  /** The peer closed (or the socket failed with `err`). */
  lost(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.origin.forget(this);
    const exchange = this.exchange;
    if (exchange === undefined) return;
    // An answer framed by the close ends with it; anything else was cut short.
    if (err === undefined && this.parser.closed()) return;
    exchange.fail(
      err !== undefined && typeof (err as { code?: unknown }).code === 'string'
        ? err
        : connectionLost(
            this.parser.inResponse
              ? 'the engine closed the connection before its answer was complete'
              : 'the engine closed the connection before answering',
          ),
    );
  }

  /** The answer ended: the connection is pooled again when it may carry another request. */
  released(): void {
    if (this.keepAlive && !this.closed) this.origin.park(this);
    else this.close();
  }

  close(): void {
    if (!this.closed) {
      this.closed = true;
      this.origin.forget(this);
    }
    this.socket?.terminate();
  }
}

/** The socket events of every leg connection, one object for all (Bun's advice for many sockets). */
const HANDLERS: SocketHandler<Conn> = {
  data(socket, piece) {
    socket.data.data(piece);
  },
  drain(socket) {
    socket.data.drained();
  },
  end(socket) {
    socket.data.lost();
    socket.end();
  },
  close(socket, err) {
    socket.data.lost(err);
  },
  error(socket, err) {
    socket.data.lost(err);
  },
  timeout(socket) {
    // Only an idle connection has a timeout set.
    if (socket.data.idle) socket.data.close();
  },
};

/** The connections to one host and port. */
class Origin {
  readonly hostname: string;
  readonly port: number;
  /** The request head's Host line. */
  readonly hostLine: string;
  readonly #idle: Conn[] = [];
  readonly #maxIdle: number;
  readonly #idleSeconds: number;

  constructor(hostname: string, port: number, host: string, maxIdle: number, idleSeconds: number) {
    this.hostname = hostname;
    this.port = port;
    this.hostLine = `host: ${host}\r\n`;
    this.#maxIdle = maxIdle;
    this.#idleSeconds = idleSeconds;
  }

  /** An idle connection, taken out of the pool, or undefined. */
  take(): Conn | undefined {
    const conn = this.#idle.pop();
    if (conn === undefined) return undefined;
    conn.idle = false;
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
  }

  get idleCount(): number {
    return this.#idle.length;
  }

  forget(conn: Conn): void {
    if (!conn.idle) return;
    conn.idle = false;
    const at = this.#idle.indexOf(conn);
    if (at >= 0) this.#idle.splice(at, 1);
  }

  closeIdle(): void {
    for (const conn of this.#idle.splice(0)) {
      conn.idle = false;
      conn.close();
    }
  }
}

/** URLs whose parse is kept. */
const MAX_TARGETS = 16_384;

/** Framing headers the client writes itself: a caller's would contradict them. */
const OWN_HEADERS: ReadonlySet<string> = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);

/** Header names fetch accepts (RFC 9110 tokens) and values (no NUL, CR or LF; Latin-1). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex
const BAD_VALUE = /[\0\r\n\u0100-\uffff]/;
/** Anything but printable ASCII and tabs: such a value is looked at closer. */
// eslint-disable-next-line no-control-regex
const NOT_PLAIN = /[^\t\x20-\x7e]/;
const LATIN1 = /[\u0080-\u00ff]/;

/**
 * A pool of keep-alive connections per origin and the requests the legs send over them.
 * @example const res = await client.post('http://10.0.0.5:1025/v1/completions', headers, body, signal);
 */
export class H1Client {
  readonly #targets = new Map<string, Target>();
  readonly #origins = new Map<string, Origin>();
  readonly #maxIdle: number;
  readonly #idleSeconds: number;

  constructor(options: H1ClientOptions = {}) {
    this.#maxIdle = options.maxIdlePerOrigin ?? DEFAULT_MAX_IDLE_PER_ORIGIN;
    this.#idleSeconds = options.idleSeconds ?? DEFAULT_IDLE_SECONDS;
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
      request = requestBytes(target, headers, body);
    } catch (err) {
      return Promise.reject(err);
    }
    if (abort?.aborted) return Promise.reject(abort.reason);
    const pooled = target.origin.take();
    if (pooled !== undefined) return this.#exchange(pooled, request, abort);
    return this.#connected(target.origin, request, abort);
  }

  /** A request on a new connection; an abort while it connects rejects at once, as fetch does. */
  #connected(origin: Origin, request: string | Uint8Array, abort: AbortSource | undefined): Promise<LegAnswer> {
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
          if (settled) conn.close();
          else this.#exchange(conn, request, abort).then(resolve, reject);
        },
        (err: unknown) => {
          abort?.remove(onAbort);
          if (!settled) reject(err);
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

  #exchange(conn: Conn, request: string | Uint8Array, abort: AbortSource | undefined): Promise<LegAnswer> {
    return new Promise<LegAnswer>((resolve, reject) => {
      conn.keepAlive = true;
      // Reset here, not when the connection was pooled: bytes after an answer's end, in the same
      // piece or later, must find the parser done and retire the connection.
      conn.parser.reset();
      conn.exchange = new Exchange(conn, abort, resolve, reject);
      conn.send(request);
    });
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
      origin = new Origin(hostname, port, parsed.host, this.#maxIdle, this.#idleSeconds);
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

/** Header names already found acceptable: a leg sends the same few names on every request. */
const goodNames = new Set<string>();

function checkName(name: string): void {
  if (!HEADER_NAME.test(name)) throw new TypeError(`invalid header name ${JSON.stringify(name)}`);
  if (OWN_HEADERS.has(name.toLowerCase())) throw new TypeError(`header ${name} is set by the client itself`);
  if (goodNames.size >= 1024) goodNames.clear();
  goodNames.add(name);
}

/** The request: its head in Latin-1, as fetch sends header values, and its body in UTF-8. */
function requestBytes(target: Target, headers: Readonly<Record<string, string>>, body: string): string | Uint8Array {
  let head = `POST ${target.path} HTTP/1.1\r\n${target.origin.hostLine}`;
  let latin1 = false;
  for (const name in headers) {
    const value = headers[name]!;
    if (!goodNames.has(name)) checkName(name);
    if (NOT_PLAIN.test(value)) {
      if (BAD_VALUE.test(value)) throw new TypeError(`invalid value for header ${name}`);
      latin1 ||= LATIN1.test(value);
    }
    head += `${name}: ${value.trim()}\r\n`;
  }
  const bodyBytes = Buffer.byteLength(body);
  head += `content-length: ${bodyBytes}\r\n\r\n`;
  // An ASCII head goes out as one string, which the socket writes as UTF-8 with its body; a head
  // with Latin-1 values is written byte for byte, as fetch writes it.
  if (!latin1) return head + body;
  const bytes = Buffer.allocUnsafe(head.length + bodyBytes);
  bytes.write(head, 0, 'latin1');
  bytes.write(body, head.length, 'utf8');
  return bytes;
}
