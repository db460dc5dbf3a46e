/**
 * One ZMTP connection over a TCP socket (node:net, the same on Bun and Deno): greetings, the NULL
 * handshake (READY both ways, each side checking the other's Socket-Type is one it may talk to), then
 * messages and commands. A protocol error, a peer of the wrong type or a closed socket ends it once,
 * with a reason. The socket types build on it (sub.ts, dealer.ts, pub.ts, router.ts).
 */
import type { Socket } from 'node:net';
import {
  type Command,
  encodeFrame,
  FrameDecoder,
  GREETING_BYTES,
  greeting,
  parseGreeting,
  parseProperties,
  readyBody,
  ZmtpError,
} from './frames.ts';

export interface ConnectionOptions {
  /** Our socket type (READY's Socket-Type). */
  readonly type: string;
  /** Socket types we accept as the peer. */
  readonly peers: readonly string[];
  /** Largest frame (and message) kept; larger ones are skipped and reported. */
  readonly maxFrameBytes: number;
  readonly onReady?: (conn: ZmtpConnection) => void;
  /** A message; `dropped` bytes of it were over the limit and not kept (those frames are empty). */
  readonly onMessage: (frames: Uint8Array[], conn: ZmtpConnection, dropped: number) => void;
  readonly onCommand?: (command: Command, conn: ZmtpConnection) => void;
  /** Called once when the connection ends, with why (undefined: closed by us). */
  readonly onClose: (reason: string | undefined, conn: ZmtpConnection) => void;
}

type Phase = 'greeting' | 'ready' | 'open' | 'closed';

export class ZmtpConnection {
  /** The peer's greeting minor version (0 = ZMTP 3.0: subscriptions as messages). */
  peerMinor = 1;
  /** The peer's READY properties. */
  peerProperties: Record<string, string> = {};
  readonly socket: Socket;
  #phase: Phase = 'greeting';
  #greetingBytes = new Uint8Array(0);
  readonly #decoder: FrameDecoder;
  readonly #options: ConnectionOptions;

  constructor(socket: Socket, options: ConnectionOptions) {
    this.socket = socket;
    this.#options = options;
    this.#decoder = new FrameDecoder(
      {
        message: (frames, dropped) => {
          if (this.#phase === 'open') options.onMessage(frames, this, dropped);
          else this.#fail('a message before the handshake ended');
        },
        command: (command) => this.#command(command),
      },
      options.maxFrameBytes,
    );
    socket.setNoDelay(true);
    socket.on('data', (chunk: Uint8Array) => this.#data(chunk));
    socket.on('error', (err) => this.#end(err.message));
    socket.on('close', () => this.#end('connection closed by the peer'));
    socket.write(greeting());
  }

  get open(): boolean {
    return this.#phase === 'open';
  }

  /**
   * Sends one message (all frames but the last with MORE).
   * @returns false when the socket's buffer is full (the caller may drop what follows).
   */
  send(frames: readonly Uint8Array[]): boolean {
    if (this.#phase !== 'open') return false;
    let ok = true;
    frames.forEach((f, i) => {
      ok = this.socket.write(encodeFrame(f, i < frames.length - 1, false)) && ok;
    });
    return ok;
  }

  /** Sends a command. */
  sendCommand(body: Uint8Array): void {
    if (this.#phase === 'open' || this.#phase === 'ready') this.socket.write(encodeFrame(body, false, true));
  }

  /** Bytes queued on the socket and not yet sent. */
  get queuedBytes(): number {
    return this.socket.writableLength;
  }

  /** Closes the connection (onClose hears undefined). */
  close(): void {
    if (this.#phase === 'closed') return;
    this.#phase = 'closed';
    this.socket.destroy();
    this.#options.onClose(undefined, this);
  }

  #data(chunk: Uint8Array): void {
    if (this.#phase === 'closed') return;
    try {
      if (this.#phase === 'greeting') {
        const joined = new Uint8Array(this.#greetingBytes.length + chunk.length);
        joined.set(this.#greetingBytes);
        joined.set(chunk, this.#greetingBytes.length);
        if (joined.length < GREETING_BYTES) {
          // The signature is checkable before the rest arrives: a non-ZMTP peer is refused at once.
          if (joined[0] !== undefined && joined[0] !== 0xff) throw new ZmtpError('not a ZMTP peer (bad greeting signature)');
          this.#greetingBytes = joined;
          return;
        }
        this.peerMinor = parseGreeting(joined.subarray(0, GREETING_BYTES)).minor;
        this.#phase = 'ready';
        this.socket.write(encodeFrame(readyBody({ 'Socket-Type': this.#options.type }), false, true));
        chunk = joined.subarray(GREETING_BYTES);
        this.#greetingBytes = new Uint8Array(0);
        if (chunk.length === 0) return;
      }
      this.#decoder.push(chunk);
    } catch (err) {
      this.#fail(err instanceof Error ? err.message : String(err));
    }
  }

  #command(command: Command): void {
    if (command.name === 'READY' && this.#phase === 'ready') {
      this.peerProperties = parseProperties(command.data);
      const type = this.peerProperties['Socket-Type'] ?? '';
      if (!this.#options.peers.includes(type)) {
        this.#fail(`a ${this.#options.type} socket does not talk to a ${type || 'nameless'} socket`);
        return;
      }
      this.#phase = 'open';
      this.#options.onReady?.(this);
      return;
    }
    if (command.name === 'ERROR') {
      this.#fail(`peer error: ${new TextDecoder().decode(command.data.subarray(1, 1 + (command.data[0] ?? 0)))}`);
      return;
    }
    if (this.#phase !== 'open') {
      this.#fail(`command ${command.name} before the handshake ended`);
      return;
    }
    this.#options.onCommand?.(command, this);
  }

  #fail(reason: string): void {
    if (this.#phase === 'closed') return;
    this.#phase = 'closed';
    this.socket.destroy();
    this.#options.onClose(reason, this);
  }

  #end(reason: string): void {
    this.#fail(reason);
  }
}
