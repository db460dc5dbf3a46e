/**
 * A TCP relay that can cut one client off from a server without closing anything: while cut, bytes
 * stop flowing both ways and new connections are accepted but not carried (calls hang, as across a
 * network partition); mended, everything flows again. A partition of one process from etcd while
 * the others reach it.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export class CutRelay {
  readonly #server: Server;
  readonly #links = new Set<Link>();
  #cut = false;
  port = 0;

  private constructor(server: Server) {
    this.#server = server;
  }

  /**
   * A relay on 127.0.0.1 (a port of its own) to `target` ("http://host:port").
   * @example const relay = await CutRelay.start('http://127.0.0.1:2379'); relay.cut(); relay.mend();
   */
  static async start(target: string): Promise<CutRelay> {
    const url = new URL(target);
    let relay: CutRelay | undefined;
    const server = createServer((client) => {
      const link = new Link(client, connect({ host: url.hostname, port: Number(url.port) }), relay!.#cut);
      relay!.#links.add(link);
      link.onEnd = () => relay!.#links.delete(link);
    });
    relay = new CutRelay(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    relay.port = (server.address() as { port: number }).port;
    return relay;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Stops every byte both ways (nothing is closed: the client's calls hang). */
  cut(): void {
    this.#cut = true;
    for (const link of this.#links) link.hold(true);
  }

  /** Lets bytes flow again. */
  mend(): void {
    this.#cut = false;
    for (const link of this.#links) link.hold(false);
  }

  async close(): Promise<void> {
    for (const link of this.#links) link.end();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** One client connection and its upstream; while held, what either side sends waits in memory. */
class Link {
  readonly #sockets: [Socket, Socket];
  readonly #waiting: [Buffer[], Buffer[]] = [[], []];
  #held: boolean;
  onEnd: () => void = () => {};

  constructor(client: Socket, upstream: Socket, held: boolean) {
    this.#sockets = [client, upstream];
    this.#held = held;
    for (const [from, to] of [
      [0, 1],
      [1, 0],
    ] as const) {
      this.#sockets[from].on('data', (chunk: Buffer) => {
        if (this.#held) this.#waiting[from].push(chunk);
        else this.#sockets[to].write(chunk);
      });
      this.#sockets[from].on('error', () => this.end()).on('close', () => this.end());
    }
  }

  hold(held: boolean): void {
    this.#held = held;
    if (held) return;
    for (const [from, to] of [
      [0, 1],
      [1, 0],
    ] as const) {
      for (const chunk of this.#waiting[from].splice(0)) this.#sockets[to].write(chunk);
    }
  }

  end(): void {
    for (const s of this.#sockets) s.destroy();
    this.onEnd();
  }
}
