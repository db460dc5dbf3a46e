/**
 * A raw TCP engine for the socket legs' tests: every byte it answers and every silence are the
 * test's own, which an HTTP server would not allow (a body cut mid-chunk, a head with no body yet).
 */
import type { Socket } from 'bun';

export interface RawEngine {
  /** A completions URL on it. */
  readonly url: string;
  /** Resolves when a connection to it has closed. */
  readonly closed: Promise<void>;
  stop(): void;
}

/**
 * Starts an engine that calls `answer` with the socket whenever a request's bytes arrive.
 * @example const e = rawEngine((socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'));
 */
export function rawEngine(answer: (socket: Socket<undefined>) => void): RawEngine {
  const { promise: closed, resolve } = Promise.withResolvers<void>();
  const server = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket) {
        answer(socket);
      },
      close() {
        resolve();
      },
    },
  });
  return { url: `http://127.0.0.1:${server.port}/v1/completions`, closed, stop: () => server.stop(true) };
}
