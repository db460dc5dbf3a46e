/**
 * A ZeroMQ ROUTER socket as a replay server needs it: DEALER or REQ peers connect and send requests;
 * each request is handed over with a reply function bound to the connection it came on (which is
 * all a ROUTER's identity frame is for when the server answers the asker directly).
 */
import type { TcpEndpoint } from './endpoint.ts';
import { ZmtpServer } from './server.ts';

export type RouterHandler = (frames: Uint8Array[], reply: (frames: readonly Uint8Array[]) => void) => void;

export class RouterSocket {
  readonly #server: ZmtpServer;

  private constructor(server: ZmtpServer) {
    this.#server = server;
  }

  /**
   * Binds a ROUTER socket whose requests go to `handler`.
   * @example const router = await RouterSocket.bind({ host: '127.0.0.1', port: 0 }, (frames, reply) => reply([...]));
   */
  static async bind(endpoint: TcpEndpoint, handler: RouterHandler, maxFrameBytes = 1 << 16): Promise<RouterSocket> {
    const server = await ZmtpServer.listen(endpoint, {
      type: 'ROUTER',
      peers: ['DEALER', 'REQ', 'ROUTER'],
      maxFrameBytes,
      onMessage: (frames, conn) => handler(frames, (reply) => void conn.send(reply)),
    });
    return new RouterSocket(server);
  }

  /** The bound port. */
  get port(): number {
    return this.#server.port;
  }

  /** Stops listening and disconnects every peer. */
  close(): Promise<void> {
    return this.#server.close();
  }
}
