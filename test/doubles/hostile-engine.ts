/**
 * An engine that answers whatever a test tells it to, byte for byte, on raw TCP: well-formed
 * answers, and the ones a broken or hostile engine gives (oversized, endless, gzip, cut mid-head,
 * early, bare LF, a stream faster than the client reads). It parses requests only as far as it
 * must: a head, then Content-Length bytes of body. Large or endless answers are pumped as fast as
 * the connection takes them (on drain), so the peer's backpressure is what bounds them.
 */
import type { Socket, TCPSocketListener } from 'bun';

/** What the engine is told when a request's head arrived (`body` undefined) and when all of it did. */
export interface EngineCall {
  readonly socket: Socket<Conn>;
  /** The request's head as text. */
  readonly head: string;
  /** The request's body, once all of it arrived. */
  readonly body: string | undefined;
}

/**
 * Answers a call. Called once with the head alone: returning true means it answered already,
 * before reading the body (the rest of the request then reads, as an engine would read it, as a
 * malformed next request: 400 and a close). Otherwise called again once the whole body is in.
 */
export type Behaviour = (call: EngineCall, engine: HostileEngine) => boolean | void;

interface Conn {
  buffered: Buffer;
  headSeen: boolean;
  /** Answered before the body was read: whatever comes next is a malformed request. */
  early: boolean;
  /** Bytes still to write, produced on demand: undefined when nothing is being pumped. */
  pump: (() => Uint8Array | undefined) | undefined;
  /** What the connection did not take of the last chunk. */
  rest: Uint8Array | undefined;
}

export interface HostileEngine {
  readonly host: string;
  readonly port: number;
  /** Requests whose head arrived. */
  readonly requests: number;
  readonly connections: number;
  /** Malformed requests seen (bytes after an early answer). */
  readonly misread: number;
  /** Bytes of pumped answers the connections have taken. */
  readonly pumped: number;
  behave: Behaviour;
  /** Writes what `next` produces as fast as the connection takes it, until it returns undefined or the connection closes. */
  pump(socket: Socket<Conn>, next: () => Uint8Array | undefined): void;
  stop(): void;
}

/**
 * Starts an engine on `host` (a loopback address of its own) answering with `behave`.
 * @example const p = hostileEngine('127.0.0.21', ({ socket, body }) => void (body !== undefined && socket.write(answer(200, '{}'))));
 */
export function hostileEngine(host: string, behave: Behaviour): HostileEngine {
  let requests = 0;
  let connections = 0;
  let misread = 0;
  let pumped = 0;
  const flush = (socket: Socket<Conn>): void => {
    const conn = socket.data;
    for (;;) {
      const bytes = conn.rest ?? conn.pump?.();
      conn.rest = undefined;
      if (bytes === undefined) {
        conn.pump = undefined;
        return;
      }
      const written = socket.write(bytes);
      if (written < 0) {
        conn.pump = undefined;
        return;
      }
      pumped += written;
      if (written < bytes.byteLength) {
        conn.rest = bytes.subarray(written);
        return;
      }
    }
  };
  const engine: HostileEngine = {
    host,
    port: 0,
    get requests() {
      return requests;
    },
    get connections() {
      return connections;
    },
    get misread() {
      return misread;
    },
    get pumped() {
      return pumped;
    },
    behave,
    pump(socket, next) {
      socket.data.pump = next;
      flush(socket);
    },
    stop: () => server.stop(true),
  };
  const server: TCPSocketListener<Conn> = Bun.listen<Conn>({
    hostname: host,
    port: 0,
    socket: {
      open(socket) {
        connections++;
        socket.data = { buffered: Buffer.alloc(0), headSeen: false, early: false, pump: undefined, rest: undefined };
      },
      data(socket, chunk) {
        const conn = socket.data;
        if (conn.early) {
          misread++;
          conn.early = false;
          socket.write(answer(400, '{"error":"malformed request line"}'));
          socket.end();
          return;
        }
        conn.buffered = conn.buffered.byteLength === 0 ? Buffer.from(chunk) : Buffer.concat([conn.buffered, chunk]);
        for (;;) {
          const end = conn.buffered.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = conn.buffered.subarray(0, end).toString('latin1');
          if (!conn.headSeen) {
            conn.headSeen = true;
            requests++;
            if (engine.behave({ socket, head, body: undefined }, engine) === true) {
              conn.early = true;
              conn.buffered = Buffer.alloc(0);
              return;
            }
          }
          const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
          if (conn.buffered.byteLength < end + 4 + length) return;
          const body = conn.buffered.subarray(end + 4, end + 4 + length).toString('utf8');
          conn.buffered = conn.buffered.subarray(end + 4 + length);
          conn.headSeen = false;
          engine.behave({ socket, head, body }, engine);
        }
      },
      drain(socket) {
        flush(socket);
      },
      close(socket) {
        socket.data.pump = undefined;
        socket.data.rest = undefined;
      },
    },
  });
  (engine as { port: number }).port = server.port;
  return engine;
}

/**
 * An HTTP/1.1 answer with a body and a Content-Length.
 * @example socket.write(answer(200, '{"ok":true}'))
 */
export function answer(status: number, body: string | Uint8Array, headers: Record<string, string> = {}): Uint8Array {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  let head = `HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ncontent-length: ${bytes.byteLength}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  return Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), bytes]);
}
