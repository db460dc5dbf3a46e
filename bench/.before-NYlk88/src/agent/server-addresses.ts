/**
 * Peer addresses of server-side links. A link event carries no address; the runtime's link list
 * has the peer's. One lookup per endpoint at a time, rerun once if more clients linked meanwhile,
 * so a burst of links costs a few lists.
 */
import type { LinkManager } from '../links/manager.ts';
import type { WorkerPool } from '../workers/pool.ts';
import type { RuntimeLink } from '../workers/protocol.ts';

export class ServerAddresses {
  readonly #pool: WorkerPool;
  readonly #handles: ReadonlyMap<string, number>;
  readonly #manager: LinkManager;
  readonly #lookups = new Map<string, 'running' | 'again'>();

  constructor(pool: WorkerPool, handles: ReadonlyMap<string, number>, manager: LinkManager) {
    this.#pool = pool;
    this.#handles = handles;
    this.#manager = manager;
  }

  /**
   * Notes in the link manager the address of every server-side link of `endpoint`.
   * @example if (event.kind === 'peer-linked') void addresses.note(endpoint);
   */
  async note(endpoint: string): Promise<void> {
    if (this.#lookups.has(endpoint)) {
      this.#lookups.set(endpoint, 'again');
      return;
    }
    do {
      this.#lookups.set(endpoint, 'running');
      await this.#list(endpoint);
    } while (this.#lookups.get(endpoint) === 'again');
    this.#lookups.delete(endpoint);
  }

  async #list(endpoint: string): Promise<void> {
    const handle = this.#handles.get(endpoint);
    if (handle === undefined) return;
    const reply = await this.#pool.run<RuntimeLink[]>({ op: 'list', handle });
    if (!reply.ok) return;
    for (const link of reply.value) {
      if (link.side === 'server' && link.remoteIp !== '')
        this.#manager.noteRemote(endpoint, link.remoteClusterId, { ip: link.remoteIp, port: link.remotePort });
    }
  }
}
