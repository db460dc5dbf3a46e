/**
 * The listening side shared by PUB and ROUTER: a TCP server whose every accepted connection becomes
 * a ZMTP connection of our type, accepting the peer types given. Bound to port 0, the port the
 * system chose is reported.
 */
import { createServer, type Server } from 'node:net';
import { ZmtpConnection, type ConnectionOptions } from './connection.ts';
import type { TcpEndpoint } from './endpoint.ts';

export type ServerConnectionOptions = Omit<ConnectionOptions, 'onClose'> & {
  readonly onClose?: (reason: string | undefined, conn: ZmtpConnection) => void;
};

export class ZmtpServer {
  readonly connections = new Set<ZmtpConnection>();
  readonly #server: Server;
  #port = 0;

  private constructor(server: Server) {
    this.#server = server;
  }

  /**
   * Listens on the endpoint.
   * @example const server = await ZmtpServer.listen({ host: '127.0.0.1', port: 0 }, options);
   */
  static listen(endpoint: TcpEndpoint, options: ServerConnectionOptions): Promise<ZmtpServer> {
    return new Promise((resolve, reject) => {
      let self: ZmtpServer;
      const server = createServer((socket) => {
        const conn = new ZmtpConnection(socket, {
          ...options,
          onClose: (reason, c) => {
            self.connections.delete(c);
            options.onClose?.(reason, c);
          },
        });
        self.connections.add(conn);
      });
      self = new ZmtpServer(server);
      server.once('error', reject);
      server.listen(endpoint.port, endpoint.host, () => {
        server.off('error', reject);
        const address = server.address();
        self.#port = typeof address === 'object' && address !== null ? address.port : endpoint.port;
        resolve(self);
      });
    });
  }

  /** The port listened on. */
  get port(): number {
    return this.#port;
  }

  /** Stops listening and closes every connection. */
  close(): Promise<void> {
    for (const conn of [...this.connections]) conn.close();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
