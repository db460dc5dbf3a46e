/**
 * One keep-alive connection of the socket client (h1-client.ts) to an engine, and the exchange it
 * carries: the request written (the rest on drain), the answer parsed as it arrives (h1-parse.ts)
 * and handed to its reader (h1-answer.ts), the connection's close turned into the exchange's
 * failure. Its pool (h1-client.ts's Origin) is told when it may carry another request and when it
 * is gone, through ConnPool.
 */
import type { Socket, SocketHandler } from 'bun';
import { H1Parser, H1ParseError, type H1Events, type H1Head } from './h1-parse.ts';
import { AnswerHeaders, BodyQueue, NO_HEADERS } from './h1-answer.ts';
import { ByteSlabs } from '../core/byte-slabs.ts';
import type { AbortSource, BodyReader, LegAnswer } from './platform.ts';

/** Texts longer than this are encoded to bytes before they are written (see send). */
const ENCODE_FIRST_CHARS = 64 * 1024;
/** Where those bytes are encoded: memory kept between requests (byte-slabs.ts). */
const slabs = new ByteSlabs();
const encoder = new TextEncoder();

/** What a connection tells the pool it belongs to. */
export interface ConnPool {
  /** The connection may carry another request. */
  park(conn: Conn): void;
  /** The connection is gone (closed by either side). */
  forget(conn: Conn): void;
}

/** The error of a connection lost under a request, coded as fetch codes it. */
export function connectionLost(message: string): Error {
  return Object.assign(new Error(message), { code: 'ECONNRESET' });
}

/**
 * One request on a connection, from its write to the end of its answer; once the head has come,
 * also the answer itself, and its body's reader (h1-answer.ts).
 */
export class Exchange extends BodyQueue implements H1Events, LegAnswer {
  readonly conn: Conn;
  status = 0;
  headers: Pick<Headers, 'get'> = NO_HEADERS;
  hasBody = false;
  resent = false;
  readonly #abort: AbortSource | undefined;
  readonly #resolve: (answer: LegAnswer) => void;
  readonly #reject: (err: unknown) => void;
  #answered = false;
  #settled = false;
  readonly #onAbort = (): void => {
    this.fail(this.#abort!.reason);
  };

  constructor(conn: Conn, abort: AbortSource | undefined, resolve: (answer: LegAnswer) => void, reject: (err: unknown) => void) {
    super();
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
    // An engine that answers before taking the whole request may read the rest as the next one.
    this.conn.keepAlive = head.keepAlive && !this.conn.writing;
    this.#resolve(this);
  }

  protected override hold(on: boolean): void {
    this.conn.hold(on);
  }

  body(bytes: Uint8Array): void {
    this.push(bytes);
  }

  end(): void {
    if (this.#settled) return;
    this.#finish();
    this.conn.released();
    this.ended();
  }

  /** The exchange fails with `err`: before the head the request rejects, after it the body's read does. */
  fail(err: unknown): void {
    if (this.#settled) return;
    this.#finish();
    this.conn.close();
    if (this.#answered) this.failed(err);
    else this.#reject(err);
  }

  reader(): BodyReader {
    return this;
  }

  override cancel(): Promise<void> {
    // The reader gave up on the answer: the rest of it is not read, so the connection goes.
    if (!this.#settled) {
      this.#finish();
      this.conn.close();
    }
    return super.cancel();
  }

  #finish(): void {
    this.#settled = true;
    this.#abort?.remove(this.#onAbort);
    this.conn.exchange = undefined;
  }

  /** The exchange never began: its connection was found closed before any byte was written. */
  unsent(): void {
    this.#settled = true;
    this.#abort?.remove(this.#onAbort);
    this.conn.exchange = undefined;
  }
}

/** A keep-alive connection to one origin, carrying one exchange at a time. */
export class Conn {
  readonly origin: ConnPool;
  socket: Socket<Conn> | undefined;
  exchange: Exchange | undefined;
  readonly parser: H1Parser;
  keepAlive = true;
  closed = false;
  idle = false;
  /** Request bytes the socket did not take yet (written on drain). */
  #unwritten: Uint8Array | undefined;
  /** The slab the request was encoded into, given back once the socket took all of it. */
  #slab: Uint8Array | undefined;
  #held = false;

  constructor(origin: ConnPool) {
    this.origin = origin;
    // The parser reports to whichever exchange the connection carries at the time.
    this.parser = new H1Parser({
      head: (head) => this.exchange?.head(head),
      body: (bytes) => this.exchange?.body(bytes),
      end: () => this.exchange?.end(),
    });
  }

  /**
   * Writes `request`, or what the socket will take of it now (the rest on drain); false when the
   * connection was found closed and not one byte was written.
   */
  send(request: string | Uint8Array): boolean {
    if (this.closed) return false;
    // A text longer than a socket takes at once is encoded once here, into a slab of memory already
    // touched: written as text, what the socket did not take would be measured and encoded again.
    if (typeof request === 'string' && request.length > ENCODE_FIRST_CHARS) {
      const size = Buffer.byteLength(request);
      const slab = slabs.take(size);
      encoder.encodeInto(request, slab);
      this.#slab = slab;
      request = slab.subarray(0, size);
    }
    const written = this.socket!.write(request);
    if (written < 0) {
      this.#release();
      return false;
    }
    if (typeof request === 'string') {
      // The socket wrote the text as UTF-8: short of that, the rest is what follows in those bytes.
      if (written < request.length || written < Buffer.byteLength(request)) {
        this.#unwritten = Buffer.from(request).subarray(written);
      }
    } else if (written < request.byteLength) this.#unwritten = request.subarray(written);
    else this.#release();
    return true;
  }

  /** The socket took the whole request (or the connection went): its slab may be used again. */
  #release(): void {
    const slab = this.#slab;
    this.#slab = undefined;
    // Not given back while the socket may still read it: only once nothing of it waits to be written.
    if (slab !== undefined && this.#unwritten === undefined) slabs.give(slab);
  }

  /** Whether part of the request is still waiting to be written. */
  get writing(): boolean {
    return this.#unwritten !== undefined;
  }

  /** Stops (true) or resumes (false) reading from the engine: its answer's reader is behind. */
  hold(on: boolean): void {
    if (this.#held === on || this.closed) return;
    this.#held = on;
    if (on) this.socket!.pause();
    else this.socket!.resume();
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
    if (this.keepAlive && !this.closed && !this.writing) {
      this.hold(false);
      this.origin.park(this);
    } else this.close();
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
export const HANDLERS: SocketHandler<Conn> = {
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
