/**
 * A ZeroMQ PUB socket: subscribers connect, say which topic prefixes they want (SUBSCRIBE/CANCEL
 * commands, or the 3.0 message form), and each message goes to those whose prefixes match its first
 * frame. A subscriber that reads too slowly is skipped rather than buffered without bound (PUB's
 * high-water mark, in bytes queued on its socket).
 */
import type { ZmtpConnection } from './connection.ts';
import type { TcpEndpoint } from './endpoint.ts';
import { ZmtpServer } from './server.ts';

export interface PubOptions {
  readonly maxFrameBytes?: number;
  /** Bytes queued on one subscriber's socket beyond which messages to it are dropped (default 64 MiB). */
  readonly highWaterBytes?: number;
}

export class PubSocket {
  readonly #server: ZmtpServer;
  readonly #subs: WeakMap<ZmtpConnection, Uint8Array[]>;
  readonly #highWater: number;
  /** Messages not sent to a subscriber over its high-water mark. */
  dropped = 0;

  private constructor(server: ZmtpServer, subs: WeakMap<ZmtpConnection, Uint8Array[]>, highWater: number) {
    this.#server = server;
    this.#subs = subs;
    this.#highWater = highWater;
  }

  /**
   * Binds a PUB socket.
   * @example const pub = await PubSocket.bind({ host: '127.0.0.1', port: 0 });
   */
  static async bind(endpoint: TcpEndpoint, options: PubOptions = {}): Promise<PubSocket> {
    const subscriptions = new WeakMap<ZmtpConnection, Uint8Array[]>();
    const server = await ZmtpServer.listen(endpoint, {
      type: 'PUB',
      peers: ['SUB', 'XSUB'],
      maxFrameBytes: options.maxFrameBytes ?? 1 << 20,
      onReady: (conn) => subscriptions.set(conn, []),
      onCommand: (command, conn) => {
        if (command.name === 'SUBSCRIBE') subscribe(subscriptions, conn, command.data);
        else if (command.name === 'CANCEL') cancel(subscriptions, conn, command.data);
      },
      onMessage: (frames, conn) => {
        // ZMTP 3.0 subscriptions: a message whose first byte is 1 (subscribe) or 0 (cancel).
        const m = frames[0];
        if (frames.length !== 1 || m === undefined || m.length === 0) return;
        if (m[0] === 1) subscribe(subscriptions, conn, m.subarray(1));
        else if (m[0] === 0) cancel(subscriptions, conn, m.subarray(1));
      },
    });
    return new PubSocket(server, subscriptions, options.highWaterBytes ?? 64 << 20);
  }

  /** The bound port. */
  get port(): number {
    return this.#server.port;
  }

  /** Subscribers with at least one subscription. */
  get subscribers(): number {
    let n = 0;
    for (const conn of this.#server.connections) if ((this.#subs.get(conn)?.length ?? 0) > 0) n++;
    return n;
  }

  /**
   * Sends a message to every subscriber whose prefixes match its first frame.
   * @example pub.send([topic, seq, payload]);
   */
  send(frames: readonly Uint8Array[]): void {
    const topic = frames[0] ?? new Uint8Array(0);
    for (const conn of this.#server.connections) {
      if (!conn.open) continue;
      const subs = this.#subs.get(conn);
      if (subs === undefined || !subs.some((prefix) => startsWith(topic, prefix))) continue;
      if (conn.queuedBytes > this.#highWater) {
        this.dropped++;
        continue;
      }
      conn.send(frames);
    }
  }

  /** Stops listening and disconnects every subscriber. */
  close(): Promise<void> {
    return this.#server.close();
  }
}

function subscribe(map: WeakMap<ZmtpConnection, Uint8Array[]>, conn: ZmtpConnection, prefix: Uint8Array): void {
  const list = map.get(conn) ?? [];
  list.push(prefix.slice());
  map.set(conn, list);
}

function cancel(map: WeakMap<ZmtpConnection, Uint8Array[]>, conn: ZmtpConnection, prefix: Uint8Array): void {
  const list = map.get(conn);
  if (list === undefined) return;
  const at = list.findIndex((p) => p.length === prefix.length && startsWith(p, prefix));
  if (at >= 0) list.splice(at, 1);
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (prefix.length > bytes.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}
