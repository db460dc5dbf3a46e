/**
 * The floor of a two-leg proxy on pooled `Bun.connect` sockets: the same legs as the bare fetch
 * proxy (proxy-bare-fetch.ts), over keep-alive connections it pools itself and a minimal HTTP/1.1
 * client (content-length and chunked answers) running on the event loop's own thread, where fetch
 * runs on a thread of its own. It handles what these fake engines send and nothing more: it is a
 * floor, not a client.
 *
 * Run: bun bench/proxy-bare-socket.ts <P url> <D url>
 */
import type { Socket } from 'bun';
import { startControl } from './proxy-control.ts';

const [pUrl, dUrl] = process.argv.slice(-2) as [string, string];
const PREFILL_KV = { do_remote_decode: true, do_remote_prefill: false };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Receives one answer's parts as the connection delivers them. */
interface Sink {
  head(status: number, contentType: string): void;
  body(bytes: Uint8Array): void;
  end(): void;
  fail(err: Error): void;
}

/** A keep-alive connection parsing one answer at a time. */
class Conn {
  socket!: Socket<Conn>;
  sink: Sink | null = null;
  #buf: Uint8Array = new Uint8Array(0);
  #state: 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-crlf' | 'trailer' = 'head';
  #left = 0;
  closed = false;

  feed(chunk: Uint8Array): void {
    this.#buf = this.#buf.byteLength === 0 ? chunk : concat(this.#buf, chunk);
    for (;;) {
      const buf = this.#buf;
      if (this.#state === 'head') {
        const end = indexOfCrlfCrlf(buf);
        if (end < 0) return;
        const head = decoder.decode(buf.subarray(0, end));
        this.#buf = buf.subarray(end + 4);
        const lines = head.split('\r\n');
        const status = Number(lines[0]!.split(' ')[1]);
        let length = -1;
        let chunked = false;
        let type = '';
        for (let i = 1; i < lines.length; i++) {
          const line = lines[i]!;
          const colon = line.indexOf(':');
          const name = line.slice(0, colon).toLowerCase();
          const value = line.slice(colon + 1).trim();
          if (name === 'content-length') length = Number(value);
          else if (name === 'transfer-encoding') chunked = value.toLowerCase().includes('chunked');
          else if (name === 'content-type') type = value;
        }
        this.sink!.head(status, type);
        if (chunked) this.#state = 'chunk-size';
        else {
          this.#state = 'length';
          this.#left = Math.max(0, length);
        }
        if (!chunked && this.#left === 0) this.#done();
        continue;
      }
      if (this.#state === 'length') {
        if (buf.byteLength === 0) return;
        const take = Math.min(this.#left, buf.byteLength);
        this.sink!.body(buf.subarray(0, take));
        this.#buf = buf.subarray(take);
        this.#left -= take;
        if (this.#left === 0) this.#done();
        continue;
      }
      if (this.#state === 'chunk-size' || this.#state === 'trailer') {
        const end = indexOfCrlf(buf);
        if (end < 0) return;
        const line = decoder.decode(buf.subarray(0, end));
        this.#buf = buf.subarray(end + 2);
        if (this.#state === 'trailer') {
          if (line === '') this.#done();
          continue;
        }
        this.#left = parseInt(line, 16);
        this.#state = this.#left === 0 ? 'trailer' : 'chunk-data';
        continue;
      }
      if (this.#state === 'chunk-data') {
        if (buf.byteLength === 0) return;
        const take = Math.min(this.#left, buf.byteLength);
        this.sink!.body(buf.subarray(0, take));
        this.#buf = buf.subarray(take);
        this.#left -= take;
        if (this.#left === 0) this.#state = 'chunk-crlf';
        continue;
      }
      // chunk-crlf
      if (buf.byteLength < 2) return;
      this.#buf = buf.subarray(2);
      this.#state = 'chunk-size';
    }
  }

  #done(): void {
    const sink = this.sink!;
    this.sink = null;
    this.#state = 'head';
    this.onIdle(this);
    sink.end();
  }

  onIdle: (conn: Conn) => void = () => {};
}

/** Idle keep-alive connections to one origin. */
class Pool {
  readonly #idle: Conn[] = [];
  readonly #host: string;
  readonly #port: number;
  constructor(url: string) {
    const u = new URL(url);
    this.#host = u.hostname;
    this.#port = Number(u.port);
  }

  async request(path: string, headers: string, body: string, sink: Sink): Promise<void> {
    let conn = this.#idle.pop();
    while (conn !== undefined && conn.closed) conn = this.#idle.pop();
    if (conn === undefined) conn = await this.#open();
    conn.sink = sink;
    const bytes = encoder.encode(body);
    conn.socket.write(
      `POST ${path} HTTP/1.1\r\nhost: ${this.#host}:${this.#port}\r\n${headers}content-length: ${bytes.byteLength}\r\n\r\n`,
    );
    conn.socket.write(bytes);
  }

  async #open(): Promise<Conn> {
    const conn = new Conn();
    conn.onIdle = (c) => this.#idle.push(c);
    conn.socket = await Bun.connect<Conn>({
      hostname: this.#host,
      port: this.#port,
      data: conn,
      socket: {
        data(socket, chunk) {
          socket.data.feed(chunk);
        },
        close(socket) {
          socket.data.closed = true;
          socket.data.sink?.fail(new Error('connection closed'));
        },
        error(socket, err) {
          socket.data.closed = true;
          socket.data.sink?.fail(err);
        },
      },
    });
    conn.socket.setNoDelay(true);
    return conn;
  }
}

const pPool = new Pool(pUrl);
const dPool = new Pool(dUrl);

function prefill(headers: string, body: string): Promise<{ kv_transfer_params?: unknown }> {
  return new Promise((resolve, reject) => {
    const parts: Uint8Array[] = [];
    pPool
      .request('/v1/completions', headers, body, {
        head() {},
        body(bytes) {
          parts.push(bytes.slice());
        },
        end() {
          resolve(JSON.parse(decoder.decode(parts.length === 1 ? parts[0]! : parts.reduce(concat))) as { kv_transfer_params?: unknown });
        },
        fail: reject,
      })
      .catch(reject);
  });
}

function decode(headers: string, body: string): Promise<Response> {
  return new Promise((resolve, reject) => {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c;
      },
    });
    let answered = false;
    dPool
      .request('/v1/completions', headers, body, {
        head(status, type) {
          answered = true;
          resolve(new Response(stream, { status, headers: { 'content-type': type || 'text/event-stream' } }));
        },
        body(bytes) {
          controller.enqueue(bytes.slice());
        },
        end() {
          controller.close();
        },
        fail(err) {
          if (answered) controller.error(err);
          else reject(err);
        },
      })
      .catch(reject);
  });
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as Record<string, unknown>;
    const headers = `content-type: application/json\r\nx-request-id: ${req.headers.get('x-request-id') ?? ''}\r\n`;
    const answer = await prefill(headers, JSON.stringify({ ...body, stream: false, max_tokens: 1, kv_transfer_params: PREFILL_KV }));
    return decode(headers, JSON.stringify({ ...body, kv_transfer_params: answer.kv_transfer_params }));
  },
});
startControl();
// A clean exit on SIGTERM, so that a profile asked for with --cpu-prof is written.
process.on('SIGTERM', () => process.exit(0));
console.log(`pdlink: proxy listening on http://127.0.0.1:${server.port}`);

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}

function indexOfCrlf(buf: Uint8Array): number {
  for (let i = 0; i + 1 < buf.byteLength; i++) if (buf[i] === 13 && buf[i + 1] === 10) return i;
  return -1;
}

function indexOfCrlfCrlf(buf: Uint8Array): number {
  for (let i = 0; i + 3 < buf.byteLength; i++) if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i;
  return -1;
}
