/**
 * An incremental parser of HTTP/1.1 responses, as an engine sends them to the proxy's socket legs
 * (h1-client.ts): fed the bytes of one connection in whatever pieces they arrive, it reports each
 * final response's head, its body's bytes as views of the pieces (no copy), and its end. Interim
 * 1xx heads are skipped. Bodies are framed as RFC 9112 §6.3 says: none for 204 and 304, chunked
 * when Transfer-Encoding ends in chunked, else Content-Length, else until the connection closes.
 * Anything it cannot frame safely throws an H1ParseError, and the connection must not be used again.
 * The head itself is read by h1-head.ts.
 */
import { Buffer } from 'node:buffer';
import { H1ParseError, parseHead } from './h1-head.ts';

export { H1ParseError };

/** Largest response head (status line and headers), and largest chunk-size or trailer line, in bytes. */
export const MAX_HEAD_BYTES = 64 * 1024;
const MAX_LINE_BYTES = 4096;

/** What a response's head says. */
export interface H1Head {
  readonly status: number;
  /** Header fields as sent (names in lower case), in order. */
  readonly headers: [string, string][];
  /** Whether the connection may carry another request once this body is read. */
  readonly keepAlive: boolean;
  /** Whether a body follows (false for 204, 304 and a Content-Length of 0). */
  readonly hasBody: boolean;
}

export interface H1Events {
  head(head: H1Head): void;
  /**
   * Bytes of the body: a view of the piece fed (valid as long as it is), or, for the data of several
   * chunks of one piece, one copy of them all.
   */
  body(bytes: Uint8Array): void;
  end(): void;
}

const enum State {
  Head,
  Length,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailer,
  UntilClose,
  Done,
}

const CR = 13;
const LF = 10;

/**
 * Parses one connection's responses, one after another.
 * @example const parser = new H1Parser(events); socket.data = (piece) => parser.feed(piece);
 */
export class H1Parser {
  readonly #events: H1Events;
  #state = State.Head;
  /** Bytes of an unfinished head or line, kept until the rest arrives. */
  #pending: Uint8Array | undefined;
  #left = 0;
  /**
   * The data of the chunks read so far from the piece being fed, as [start, end) pairs, reported
   * as one body event when the piece is done or the body ends: a stream's events often come many
   * to a piece, and one event for them all is one queue entry and one write to the client, not many.
   */
  readonly #spans: number[] = [];
  #piece: Uint8Array | undefined;

  constructor(events: H1Events) {
    this.#events = events;
  }

  /** Whether a response has started and not ended: a close now cuts it short. */
  get inResponse(): boolean {
    return this.#state !== State.Head || this.#pending !== undefined;
  }

  /** Whether the response ends when the connection closes. */
  get untilClose(): boolean {
    return this.#state === State.UntilClose;
  }

  /** Readies the parser for the next response on the same connection. */
  reset(): void {
    this.#state = State.Head;
    this.#pending = undefined;
  }

  /**
   * The connection closed: true when that ended an answer framed by the close (reported as its
   * end); false otherwise, when an answer was awaited or cut short.
   * @example if (!parser.closed()) fail(lost);
   */
  closed(): boolean {
    if (this.#state !== State.UntilClose) return false;
    this.#state = State.Done;
    this.#events.end();
    return true;
  }

  /** Parses the next piece of the connection's bytes. Throws H1ParseError on what cannot be framed. */
  feed(piece: Uint8Array): void {
    this.#piece = piece;
    try {
      this.#feed(piece);
    } finally {
      // Data read before a refusal is reported too, as it would have been chunk by chunk.
      this.#flush();
      this.#piece = undefined;
    }
  }

  #feed(piece: Uint8Array): void {
    let at = 0;
    const n = piece.byteLength;
    while (at < n) {
      switch (this.#state) {
        case State.Head: {
          at = this.#head(piece, at);
          break;
        }
        case State.Length: {
          const take = Math.min(this.#left, n - at);
          this.#left -= take;
          this.#events.body(view(piece, at, at + take));
          at += take;
          if (this.#left === 0) this.#finish();
          break;
        }
        case State.ChunkData: {
          const take = Math.min(this.#left, n - at);
          this.#left -= take;
          this.#spans.push(at, at + take);
          at += take;
          if (this.#left === 0) this.#state = State.ChunkEnd;
          break;
        }
        case State.ChunkEnd: {
          // The CRLF after a chunk's data, read as bytes when both are in this piece.
          if (this.#pending === undefined && n - at >= 2) {
            if (piece[at] !== CR || piece[at + 1] !== LF) throw new H1ParseError('chunk data longer than its size');
            at += 2;
            this.#state = State.ChunkSize;
            break;
          }
          at = this.#lineStep(piece, at);
          if (at < 0) return;
          break;
        }
        case State.ChunkSize: {
          // A size line read as bytes when it is whole in this piece (every chunk of a stream has one).
          if (this.#pending === undefined) {
            const next = this.#chunkSize(piece, at);
            if (next >= 0) {
              at = next;
              break;
            }
          }
          at = this.#lineStep(piece, at);
          if (at < 0) return;
          break;
        }
        case State.Trailer: {
          at = this.#lineStep(piece, at);
          if (at < 0) return;
          break;
        }
        case State.UntilClose: {
          this.#events.body(view(piece, at, piece.byteLength));
          return;
        }
        case State.Done:
          throw new H1ParseError('bytes after the end of the response');
      }
    }
  }

  /** Reads one framing line from `at` as text; -1 when it does not end in this piece (what there is, is kept). */
  #lineStep(piece: Uint8Array, at: number): number {
    const line = this.#line(piece, at, MAX_LINE_BYTES);
    if (line === undefined) return -1;
    this.#onLine(line.text);
    return line.next;
  }

  /**
   * Reads a chunk-size line (hex digits, then CRLF or extensions up to CRLF) from `at`; returns
   * where the chunk's data starts, or -1 when the line does not end in this piece.
   */
  #chunkSize(piece: Uint8Array, at: number): number {
    let size = 0;
    let i = at;
    const n = piece.byteLength;
    for (; i < n && i - at <= 12; i++) {
      const digit = hexValue(piece[i]!);
      if (digit < 0) break;
      size = size * 16 + digit;
    }
    if (i >= n) return -1;
    const digits = i - at;
    let next: number;
    if (digits > 0 && digits <= 12 && piece[i] === CR) {
      if (i + 1 >= n) return -1;
      if (piece[i + 1] !== LF) throw new H1ParseError('a line not ended by CRLF');
      next = i + 2;
    } else {
      // Extensions, spaces or a bad size: the line as text decides.
      const lf = piece.indexOf(LF, i);
      if (lf < 0 || lf + 1 - at > MAX_LINE_BYTES) return -1;
      return this.#lineAt(piece, at, lf);
    }
    if (size === 0) this.#state = State.Trailer;
    else {
      this.#left = size;
      this.#state = State.ChunkData;
    }
    return next;
  }

  /** The line [at, lf] of one piece handled as text; returns where parsing goes on. */
  #lineAt(piece: Uint8Array, at: number, lf: number): number {
    if (lf === at || piece[lf - 1] !== CR) throw new H1ParseError('a line not ended by CRLF');
    this.#onLine(latin1(piece, at, lf - 1));
    return lf + 1;
  }

  #finish(): void {
    this.#flush();
    this.#state = State.Done;
    this.#events.end();
  }

  /** Reports the chunk data read from the piece being fed: a view for one span, one copy for several. */
  #flush(): void {
    const spans = this.#spans;
    const piece = this.#piece;
    if (spans.length === 0 || piece === undefined) return;
    if (spans.length === 2) {
      const bytes = view(piece, spans[0]!, spans[1]!);
      spans.length = 0;
      this.#events.body(bytes);
      return;
    }
    let length = 0;
    for (let i = 0; i < spans.length; i += 2) length += spans[i + 1]! - spans[i]!;
    const out = new Uint8Array(length);
    const source = Buffer.isBuffer(piece) ? piece : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    let at = 0;
    for (let i = 0; i < spans.length; i += 2) at += source.copy(out, at, spans[i]!, spans[i + 1]!);
    spans.length = 0;
    this.#events.body(out);
  }

  /** One line of chunked framing. */
  #onLine(text: string): void {
    if (this.#state === State.ChunkEnd) {
      if (text !== '') throw new H1ParseError('chunk data longer than its size');
      this.#state = State.ChunkSize;
      return;
    }
    if (this.#state === State.Trailer) {
      if (text === '') this.#finish();
      return;
    }
    const semicolon = text.indexOf(';');
    const digits = (semicolon < 0 ? text : text.slice(0, semicolon)).trim();
    if (!/^[0-9a-fA-F]{1,12}$/.test(digits)) throw new H1ParseError(`bad chunk size ${JSON.stringify(text.slice(0, 40))}`);
    const size = parseInt(digits, 16);
    if (size === 0) this.#state = State.Trailer;
    else {
      this.#left = size;
      this.#state = State.ChunkData;
    }
  }

  /**
   * A CRLF-ended line starting at `at` (with what an earlier piece left), or undefined when the
   * piece ends first (what there is, is kept).
   */
  #line(piece: Uint8Array, at: number, limit: number): { text: string; next: number } | undefined {
    const end = piece.indexOf(LF, at);
    if (end < 0) {
      this.#keep(piece, at, limit);
      return undefined;
    }
    let bytes = piece.subarray(at, end + 1);
    if (this.#pending !== undefined) {
      bytes = join(this.#pending, bytes);
      this.#pending = undefined;
    }
    if (bytes.byteLength > limit) throw new H1ParseError(`a line longer than ${limit} bytes`);
    if (bytes.byteLength < 2 || bytes[bytes.byteLength - 2] !== CR) throw new H1ParseError('a line not ended by CRLF');
    return { text: latin1(bytes, 0, bytes.byteLength - 2), next: end + 1 };
  }

  #keep(piece: Uint8Array, at: number, limit: number): void {
    const rest = piece.subarray(at);
    this.#pending = this.#pending === undefined ? rest.slice() : join(this.#pending, rest);
    if (this.#pending.byteLength > limit) throw new H1ParseError(`a head or line longer than ${limit} bytes`);
  }

  /** Parses a head from `at` if it is complete; returns where parsing goes on. */
  #head(piece: Uint8Array, at: number): number {
    // The head ends at its first empty line; what an earlier piece left of it is joined in front.
    let bytes: Uint8Array;
    let base: number;
    if (this.#pending === undefined) {
      bytes = piece;
      base = at;
    } else {
      bytes = join(this.#pending, piece.subarray(at));
      base = 0;
    }
    const end = headEnd(bytes, base);
    if (end < 0) {
      if (this.#pending === undefined) this.#keep(piece, at, MAX_HEAD_BYTES);
      else {
        if (bytes.byteLength > MAX_HEAD_BYTES) throw new H1ParseError(`a head longer than ${MAX_HEAD_BYTES} bytes`);
        this.#pending = bytes;
      }
      return piece.byteLength;
    }
    if (end - base > MAX_HEAD_BYTES) throw new H1ParseError(`a head longer than ${MAX_HEAD_BYTES} bytes`);
    const consumedOfPiece = this.#pending === undefined ? end : end - this.#pending.byteLength + at;
    const text = latin1(bytes, base, end - 4);
    this.#pending = undefined;
    this.#onHead(text);
    return consumedOfPiece;
  }

  #onHead(text: string): void {
    const head = parseHead(text);
    if (head === undefined) return;
    const { status, headers, keepAlive, framing } = head;
    const hasBody = framing !== 'none';
    if (framing === 'none') this.#state = State.Done;
    else if (framing === 'chunked') this.#state = State.ChunkSize;
    else if (framing === 'close') this.#state = State.UntilClose;
    else {
      this.#left = head.length;
      this.#state = State.Length;
    }
    this.#events.head({ status, headers, keepAlive, hasBody });
    if (!hasBody) this.#events.end();
  }
}

/**
 * Bytes [start, end) of `bytes` as ISO-8859-1 text, one character per byte, as fetch reads header
 * bytes (TextDecoder's "latin1" is windows-1252, which reads 0x80-0x9F as other characters). A
 * socket's pieces are Buffers, read in place; a joined piece is viewed as one.
 */
function latin1(bytes: Uint8Array, start: number, end: number): string {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buffer.toString('latin1', start, end);
}

/** Bytes [start, end) of `bytes`: the piece itself when whole, else a plain view (cheaper than a Buffer's subarray). */
function view(bytes: Uint8Array, start: number, end: number): Uint8Array {
  if (start === 0 && end === bytes.byteLength) return bytes;
  return new Uint8Array(bytes.buffer, bytes.byteOffset + start, end - start);
}

/** The value of an ASCII hex digit, or -1. */
function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * Index just past the first CRLFCRLF at or after `from`, or -1 when the head is not complete yet.
 * A line ended by a bare LF throws at once: waiting for a CRLFCRLF that never comes would hold the
 * leg until the engine's idle timeout.
 */
function headEnd(bytes: Uint8Array, from: number): number {
  const n = bytes.byteLength;
  let i = from;
  for (;;) {
    const lf = bytes.indexOf(LF, i);
    if (lf < 0) return -1;
    if (lf === from || bytes[lf - 1] !== CR || (lf + 1 < n && bytes[lf + 1] === LF)) {
      throw new H1ParseError('a head line ended by a bare LF, not CRLF');
    }
    if (lf + 2 >= n) return -1;
    if (bytes[lf + 1] === CR && bytes[lf + 2] === LF) return lf + 3;
    i = lf + 1;
  }
}

function join(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}
