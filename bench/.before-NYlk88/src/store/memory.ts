/**
 * The in-memory store: the embedded default. One process, nothing shared, always connected; its
 * leases expire on a timer like etcd's, so an election over it behaves the same (a lone candidate
 * wins at once).
 */
import { prefixOf, type Store, type StoreLease } from './store.ts';

interface Entry {
  value: string;
  lease: string | undefined;
}

export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly prefix: string;
  readonly #data = new Map<string, Entry>();
  readonly #watchers = new Set<{ prefix: string; listener: (key: string, value: string | undefined) => void }>();
  readonly #leases = new Map<string, ReturnType<typeof setTimeout>>();
  #nextLease = 1;

  /** @example const store = new MemoryStore('default'); */
  constructor(cluster = 'default') {
    this.prefix = prefixOf(cluster);
  }

  connected(): boolean {
    return true;
  }

  onConnected(): () => void {
    return () => {};
  }

  async get(key: string): Promise<string | undefined> {
    return this.#data.get(key)?.value;
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

  watch(prefix: string, listener: (key: string, value: string | undefined) => void): () => void {
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
      keepAlive: async () => {
        if (!this.#leases.has(id)) return false;
        arm();
        return true;
      },
      createIfAbsent: async (key, value) => {
        const held = this.#data.get(key);
        if (held !== undefined) return { created: false, holder: held.value };
        if (!this.#leases.has(id)) throw new Error(`lease ${id} has expired`);
        this.#set(key, value, id);
        return { created: true, holder: value };
      },
      revoke: async () => this.#expire(id),
    };
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
    for (const w of this.#watchers) if (key.startsWith(w.prefix)) w.listener(key, value);
  }
}
