/**
 * A ZeroMQ SUB socket that connects to one PUB endpoint and stays connected: it reconnects with
 * backoff whenever the connection ends (the publisher restarted, the network blinked), subscribes
 * on every new connection (as a ZMTP 3.1 SUBSCRIBE command, or the 3.0 message form for an older
 * peer), and reports each state change so the owner can count it and tell that messages may have
 * been missed meanwhile.
 */
import { connect } from 'node:net';
import { commandBody, encodeFrame } from './frames.ts';
import { ZmtpConnection } from './connection.ts';
import type { TcpEndpoint } from './endpoint.ts';

export interface SubOptions {
  readonly endpoint: TcpEndpoint;
  /** Topic prefixes (default: everything). */
  readonly topics?: readonly Uint8Array[];
  readonly maxFrameBytes: number;
  /** Reconnect backoff: the first wait and the longest (default 100 ms and 5 s, libzmq's style). */
  readonly reconnectMs?: { readonly min: number; readonly max: number };
  /** A message; `dropped` bytes of frames over the limit were not kept (those frames are empty). */
  readonly onMessage: (frames: Uint8Array[], dropped: number) => void;
  /** Connected (the handshake ended) or not, with why it ended. */
  readonly onState?: (connected: boolean, reason: string | undefined) => void;
}

export class SubSocket {
  readonly #options: SubOptions;
  #conn: ZmtpConnection | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #wait: number;
  #closed = false;

  constructor(options: SubOptions) {
    this.#options = options;
    this.#wait = options.reconnectMs?.min ?? 100;
    this.#connect();
  }

  /** Whether the handshake with the publisher has ended and messages flow. */
  get connected(): boolean {
    return this.#conn?.open === true;
  }

  /** Disconnects for good. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#conn?.close();
  }

  #connect(): void {
    if (this.#closed) return;
    const { host, port } = this.#options.endpoint;
    const socket = connect({ host, port });
    let wasOpen = false;
    this.#conn = new ZmtpConnection(socket, {
      type: 'SUB',
      peers: ['PUB', 'XPUB'],
      maxFrameBytes: this.#options.maxFrameBytes,
      onReady: (conn) => {
        wasOpen = true;
        this.#wait = this.#options.reconnectMs?.min ?? 100;
        for (const topic of this.#options.topics ?? [new Uint8Array(0)]) {
          if (conn.peerMinor >= 1) conn.sendCommand(commandBody('SUBSCRIBE', topic));
          else {
            const message = new Uint8Array(topic.length + 1);
            message[0] = 1;
            message.set(topic, 1);
            conn.socket.write(encodeFrame(message, false, false));
          }
        }
        this.#options.onState?.(true, undefined);
      },
      onMessage: (frames, _conn, dropped) => this.#options.onMessage(frames, dropped),
      onClose: (reason) => {
        if (this.#closed) return;
        if (wasOpen) this.#options.onState?.(false, reason);
        const wait = this.#wait;
        this.#wait = Math.min(this.#options.reconnectMs?.max ?? 5000, this.#wait * 2);
        this.#timer = setTimeout(() => this.#connect(), wait);
        (this.#timer as { unref?: () => void }).unref?.();
      },
    });
  }
}
