/**
 * The etcd store, on the `etcd3` client. Every call has a short deadline and no client-side
 * retry or circuit breaker (the callers run their own loops, and a breaker would keep calls refused
 * for seconds after etcd is back); gRPC reconnects with a backoff capped at one second, so a
 * restarted etcd is seen again within about a second. `connected()` follows a probe every
 * PROBE_MS and the outcome of every call.
 */
import { Etcd3, type IOptions, type Lease } from 'etcd3';
import { noop } from 'cockatiel';
import { prefixOf, type Store, type StoreLease } from './store.ts';

/** How often the connection is probed while nothing else talks to etcd. */
const PROBE_MS = 500;
/** Deadline of one unary call: far above a loopback round trip, far below a lease TTL. */
const CALL_DEADLINE_MS = 1000;

export interface EtcdStoreOptions {
  readonly endpoints: readonly string[];
  readonly cluster: string;
  /** Deadline of one call (default 1 s). */
  readonly callDeadlineMs?: number;
}

export class EtcdStore implements Store {
  readonly kind = 'etcd';
  readonly prefix: string;
  readonly #client: Etcd3;
  readonly #deadlineMs: number;
  readonly #listeners = new Set<(connected: boolean) => void>();
  readonly #probe: ReturnType<typeof setInterval>;
  #connected = false;
  #closed = false;

  /** @example const store = new EtcdStore({ endpoints: ['http://127.0.0.1:2379'], cluster: 'default' }); */
  constructor(options: EtcdStoreOptions) {
    this.prefix = prefixOf(options.cluster);
    this.#deadlineMs = options.callDeadlineMs ?? CALL_DEADLINE_MS;
    const deadlineMs = this.#deadlineMs;
    const config: IOptions = {
      hosts: [...options.endpoints],
      dialTimeout: deadlineMs,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + deadlineMs }),
      faultHandling: { host: () => noop, global: noop },
      grpcOptions: {
        'grpc.initial_reconnect_backoff_ms': 200,
        'grpc.max_reconnect_backoff_ms': 1000,
        'grpc.min_reconnect_backoff_ms': 100,
      } as NonNullable<IOptions['grpcOptions']>,
    };
    this.#client = new Etcd3(config);
    this.#probe = setInterval(() => void this.#ping(), PROBE_MS);
    this.#probe.unref?.();
    void this.#ping();
  }

  connected(): boolean {
    return this.#connected;
  }

  onConnected(listener: (connected: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get(key: string): Promise<string | undefined> {
    return this.#call(async () => (await this.#client.get(this.prefix + key).string()) ?? undefined);
  }

  put(key: string, value: string): Promise<void> {
    return this.#call(async () => {
      await this.#client.put(this.prefix + key).value(value);
    });
  }

  delete(key: string): Promise<void> {
    return this.#call(async () => {
      await this.#client.delete().key(this.prefix + key);
    });
  }

  list(prefix: string): Promise<Map<string, string>> {
    return this.#call(async () => {
      const all = await this.#client
        .getAll()
        .prefix(this.prefix + prefix)
        .strings();
      return new Map(Object.entries(all).map(([k, v]) => [k.slice(this.prefix.length), v]));
    });
  }

  watch(prefix: string, listener: (key: string, value: string | undefined) => void): () => void {
    let stopped = false;
    let cancel: (() => void) | undefined;
    // The client re-establishes a watch after a disconnection on its own; creating one waits for etcd.
    this.#client
      .watch()
      .prefix(this.prefix + prefix)
      .create()
      .then(
        (watcher) => {
          watcher.on('put', (kv) => listener(kv.key.toString().slice(this.prefix.length), kv.value.toString()));
          watcher.on('delete', (kv) => listener(kv.key.toString().slice(this.prefix.length), undefined));
          watcher.on('error', () => {});
          cancel = () => void watcher.cancel().catch(() => {});
          if (stopped) cancel();
        },
        () => {},
      );
    return () => {
      stopped = true;
      cancel?.();
    };
  }

  grantLease(ttlSeconds: number): Promise<StoreLease> {
    return this.#call(async () => {
      const lease: Lease = this.#client.lease(ttlSeconds, { autoKeepAlive: false });
      // A lost lease is reported through keepAlive(); the event only needs a listener.
      lease.on('lost', () => {});
      const id = String(await lease.grant());
      return {
        id,
        keepAlive: () => this.#keepAlive(lease),
        createIfAbsent: (key, value) => this.#createIfAbsent(lease, key, value),
        revoke: async () => {
          await lease.revoke().catch(() => {});
        },
      };
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#probe);
    this.#listeners.clear();
    this.#client.close();
  }

  async #keepAlive(lease: Lease): Promise<boolean> {
    if (lease.revoked()) return false;
    // keepaliveOnce runs on a stream, which has no deadline of its own.
    try {
      await this.#call(() => withDeadline(lease.keepaliveOnce(), this.#deadlineMs, 'lease keep-alive'));
      return true;
    } catch (err) {
      if (lease.revoked()) return false;
      throw err;
    }
  }

  async #createIfAbsent(lease: Lease, key: string, value: string): Promise<{ created: boolean; holder: string | undefined }> {
    return this.#call(async () => {
      const full = this.prefix + key;
      const result = await this.#client
        .if(full, 'Create', '==', 0)
        .then(
          this.#client
            .put(full)
            .value(value)
            .lease(await lease.grant()),
        )
        .else(this.#client.get(full))
        .commit();
      if (result.succeeded) return { created: true, holder: value };
      const kv = result.responses[0]?.response_range?.kvs[0];
      return { created: false, holder: kv === undefined ? undefined : kv.value.toString() };
    });
  }

  async #ping(): Promise<void> {
    if (this.#closed) return;
    await this.#call(() => this.#client.maintenance.status()).catch(() => {});
  }

  async #call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      const value = await fn();
      this.#set(true);
      return value;
    } catch (err) {
      this.#set(false);
      throw err;
    }
  }

  #set(connected: boolean): void {
    if (this.#closed || connected === this.#connected) return;
    this.#connected = connected;
    for (const listener of this.#listeners) listener(connected);
  }
}

function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
