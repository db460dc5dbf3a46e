/**
 * A raw client of the device link port (native/src/wire.h), for tests that play a hostile peer:
 * plain (unauthenticated) control handshakes, data connections that then sit idle, and
 * handshakes that never finish. Little-endian, fixed-size messages.
 */
import { connect, type Socket } from 'node:net';

const MAGIC = 0x54524450;
const VERSION = 2;
export const HELLO_SIZE = 160;
const WELCOME_SIZE = 104;
const CONFIRM_SIZE = 48;
const ACK_SIZE = 16;
const CONN = { ctl: 1, data: 2 } as const;
const HELLO_FORCE_LINK = 1;

export interface HelloFields {
  readonly kind: number;
  readonly clientId: bigint;
  readonly serverId: bigint;
  readonly session?: bigint;
  readonly flags?: number;
}

export function hello(f: HelloFields): Buffer {
  const b = Buffer.alloc(HELLO_SIZE);
  b.writeUInt32LE(MAGIC, 0);
  b.writeUInt32LE(VERSION, 4);
  b.writeUInt32LE(f.kind, 8);
  b.writeUInt32LE(1, 12); // PDRT_ROLE_DECODER
  b.writeBigUInt64LE(f.clientId, 16);
  b.writeBigUInt64LE(f.serverId, 24);
  b.writeBigUInt64LE(f.session ?? 0n, 32);
  b.writeUInt32LE(f.flags ?? 0, 40);
  return b;
}

function confirm(): Buffer {
  const b = Buffer.alloc(CONFIRM_SIZE);
  b.writeUInt32LE(MAGIC, 0);
  return b;
}

/** A connected socket with a reader of exact byte counts (null on EOF, error or timeout). */
export class RawConn {
  readonly socket: Socket;
  #buf = Buffer.alloc(0);
  #closed = false;
  #wake: (() => void) | undefined;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      this.#wake?.();
    });
    const end = (): void => {
      this.#closed = true;
      this.#wake?.();
    };
    socket.on('close', end);
    socket.on('error', end);
  }

  /** Connects from localAddress; rejects when the connection is refused, fails or takes over 3 s. */
  static open(host: string, port: number, localAddress: string): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port, localAddress });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error('connect timed out'));
      }, 3000);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new RawConn(socket));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  async read(n: number, timeoutMs: number): Promise<Buffer | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.#buf.length < n) {
      if (this.#closed || Date.now() >= deadline) return null;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  write(b: Buffer): void {
    this.socket.write(b);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Status of a WELCOME, and its session; null when none came. */
async function welcome(c: RawConn): Promise<{ status: number; session: bigint } | null> {
  const b = await c.read(WELCOME_SIZE, 5000);
  if (b === null || b.readUInt32LE(0) !== MAGIC) return null;
  return { status: b.readInt32LE(4), session: b.readBigUInt64LE(16) };
}

/**
 * An unauthenticated control handshake as clientId: the link's control connection and session,
 * or null when the server refused it.
 */
export async function rawLink(
  host: string,
  port: number,
  from: string,
  clientId: bigint,
  serverId: bigint,
): Promise<{ ctl: RawConn; session: bigint } | null> {
  const c = await RawConn.open(host, port, from);
  c.write(hello({ kind: CONN.ctl, clientId, serverId, flags: HELLO_FORCE_LINK }));
  const w = await welcome(c);
  if (w === null || w.status !== 0) return (c.destroy(), null);
  c.write(confirm());
  const ack = await c.read(ACK_SIZE, 5000);
  if (ack === null || ack.readInt32LE(4) !== 0) return (c.destroy(), null);
  return { ctl: c, session: w.session };
}

/** A data connection of a raw link, left idle once welcomed; null when the server refused it. */
export async function rawData(
  host: string,
  port: number,
  from: string,
  clientId: bigint,
  serverId: bigint,
  session: bigint,
): Promise<RawConn | null> {
  const c = await RawConn.open(host, port, from).catch(() => null);
  if (c === null) return null;
  c.write(hello({ kind: CONN.data, clientId, serverId, session }));
  const w = await welcome(c);
  if (w === null || w.status !== 0) return (c.destroy(), null);
  return c;
}
