/**
 * The in-memory store: the embedded default. One process, nothing shared, always connected; its
 * leases expire on a timer like etcd's and its transactions check their guard the same way, so an
 * election and a guarded write over it behave as over etcd (a lone candidate wins at once).
 */
import { StoreError } from './store-error.ts';
import { prefixOf, type Claim, type Guard, type HeldKey, type Store, type StoreHealth, type StoreLease } from './store.ts';

interface Entry {
  value: string;
  lease: string | undefined;
}

export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly prefix: string;
  readonly #data = new Map<string, Entry>();
  readonly #watchers = new Set<{ prefix: string; listener: (key: string, value: string | undefined, revision: number) => void }>();
  readonly #leases = new Map<string, ReturnType<typeof setTimeout>>();
  #nextLease = 1;
  #revision = 1;

  /** @example const store = new MemoryStore('default'); */
  constructor(cluster = 'default') {
    this.prefix = prefixOf(cluster);
  }

  connected(): boolean {
    return true;
  }

  onConnected(_listener: (connected: boolean) => void): () => void {
    return () => {};
  }

  health(): StoreHealth {
    return { connected: true, noSpace: false, errors: { unreachable: 0, no_space: 0, too_large: 0, refused: 0 }, dbSizeBytes: undefined };
  }

  async get(key: string): Promise<string | undefined> {
    return this.#data.get(key)?.value;
  }

  async held(key: string): Promise<HeldKey | undefined> {
    const entry = this.#data.get(key);
    return entry === undefined ? undefined : { value: entry.value, lease: entry.lease };
  }

  async put(key: string, value: string): Promise<void> {
    this.#set(key, value, undefined);
  }

  async delete(key: string): Promise<void> {
    if (this.#data.delete(key)) this.#notify(key, undefined);
  }

  async list(prefix: string): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const [key, entry] of this.#data) if (key.startsWith(prefix)) out.set(key, entry.value);
    return out;
  }

  watch(prefix: string, listener: (key: string, value: string | undefined, revision: number) => void): () => void {
    const watcher = { prefix, listener };
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  async grantLease(ttlSeconds: number): Promise<StoreLease> {
    const id = String(this.#nextLease++);
    const arm = (): void => {
      clearTimeout(this.#leases.get(id));
      const timer = setTimeout(() => this.#expire(id), ttlSeconds * 1000);
      timer.unref?.();
      this.#leases.set(id, timer);
    };
    arm();
    return {
      id,
      ttlSeconds,
      keepAlive: async () => {
        if (!this.#leases.has(id)) return false;
        arm();
        return true;
      },
      revoke: async () => this.#expire(id),
    };
  }

  async claim(key: string, value: string, lease: StoreLease): Promise<Claim> {
    const held = this.#data.get(key);
    if (held !== undefined) return { created: false, holder: { value: held.value, lease: held.lease }, revision: this.#revision };
    if (!this.#leases.has(lease.id)) throw new StoreError('refused', key, `lease ${lease.id} not found`);
    this.#set(key, value, lease.id);
    return { created: true, holder: { value, lease: lease.id }, revision: this.#revision };
  }

  async commit(guard: Guard | undefined, puts: ReadonlyMap<string, string>, deletes: readonly string[]): Promise<boolean> {
    if (guard !== undefined && this.#data.get(guard.key)?.lease !== guard.lease) return false;
    for (const [key, value] of puts) this.#set(key, value, undefined);
    for (const key of deletes) await this.delete(key);
    return true;
  }

  /** Ends a lease by id and its keys, as an operator's `etcdctl lease revoke` would. */
  async revokeLease(id: string): Promise<void> {
    this.#expire(id);
  }

  async close(): Promise<void> {
    for (const timer of this.#leases.values()) clearTimeout(timer);
    this.#leases.clear();
    this.#watchers.clear();
  }

  #set(key: string, value: string, lease: string | undefined): void {
    this.#data.set(key, { value, lease });
    this.#notify(key, value);
  }

  #expire(id: string): void {
    clearTimeout(this.#leases.get(id));
    if (!this.#leases.delete(id)) return;
    for (const [key, entry] of [...this.#data]) if (entry.lease === id) void this.delete(key);
  }

  #notify(key: string, value: string | undefined): void {
    const revision = ++this.#revision;
    for (const w of this.#watchers) if (key.startsWith(w.prefix)) w.listener(key, value, revision);
  }
}
