/**
 * The etcd store, on the `etcd3` client's raw RPCs (etcd-client.ts configures member failover). A
 * call that fails becomes a StoreError naming its key; only an unreachable store turns
 * `connected()` false (a refused write comes from a store that answered). A probe every PROBE_MS
 * keeps `connected()`, the database size and etcd's NOSPACE alarm current while nothing else talks
 * to etcd. With `compactionSeconds`, the history this client has seen is compacted: every period,
 * everything older than the revision of one period ago goes, so what pdlink writes never piles up.
 */
import type { Etcd3 } from 'etcd3';
import { connect } from 'node:net';
import { createEtcdClient, rangeEnd, ATTEMPT_DEADLINE_MS } from './etcd-client.ts';
import { STORE_ERROR_REASONS, StoreError, storeErrorReason, toStoreError, type StoreErrorReason } from './store-error.ts';
import { prefixOf, type Claim, type Guard, type HeldKey, type Store, type StoreHealth, type StoreLease } from './store.ts';

/** How often the connection is probed while nothing else talks to etcd. */
const PROBE_MS = 500;
/** A listing's deadline, in attempt deadlines. */
const LIST_DEADLINES = 5;

export interface EtcdStoreOptions {
  readonly endpoints: readonly string[];
  readonly cluster: string;
  /** Deadline of one attempt of a call (default 1 s). */
  readonly callDeadlineMs?: number;
  /** Compact etcd's history older than this many seconds (default 0: this client does not compact). */
  readonly compactionSeconds?: number;
}

interface Kv {
  key: Buffer;
  value: Buffer;
  lease: string;
  mod_revision: string;
}

export class EtcdStore implements Store {
  readonly kind = 'etcd';
  readonly prefix: string;
  readonly #client: Etcd3;
  readonly #endpoints: readonly string[];
  readonly #deadlineMs: number;
  readonly #listeners = new Set<(connected: boolean) => void>();
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  readonly #errors = Object.fromEntries(STORE_ERROR_REASONS.map((r) => [r, 0])) as Record<StoreErrorReason, number>;
  #noSpace = false;
  #dbSize: number | undefined;
  /** The newest revision any answer carried, and the one a period ago (what compaction keeps from). */
  #revision = 0;
  #compactMark = 0;
  #compacted = 0;
  #connected = false;
  #closed = false;

  /** @example const store = new EtcdStore({ endpoints: ['http://127.0.0.1:2379'], cluster: 'default' }); */
  constructor(options: EtcdStoreOptions) {
    this.prefix = prefixOf(options.cluster);
    this.#endpoints = [...options.endpoints];
    this.#deadlineMs = options.callDeadlineMs ?? ATTEMPT_DEADLINE_MS;
    this.#client = createEtcdClient(options.endpoints, this.#deadlineMs);
    this.#timers.push(setInterval(() => void this.#probe(), PROBE_MS));
    const compactionMs = (options.compactionSeconds ?? 0) * 1000;
    if (compactionMs > 0) this.#timers.push(setInterval(() => void this.#compact(), compactionMs));
    for (const t of this.#timers) t.unref?.();
    void this.#probe();
  }

  connected(): boolean {
    return this.#connected;
  }

  onConnected(listener: (connected: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  health(): StoreHealth {
    return { connected: this.#connected, noSpace: this.#noSpace, errors: { ...this.#errors }, dbSizeBytes: this.#dbSize };
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.held(key))?.value;
  }

  held(key: string): Promise<HeldKey | undefined> {
    return this.#call(key, async () => {
      const res = await this.#client.kv.range({ key: this.#key(key) });
      this.#saw(res.header.revision);
      const kv = res.kvs[0] as Kv | undefined;
      return kv === undefined ? undefined : { value: kv.value.toString(), lease: kv.lease === '0' ? undefined : kv.lease };
    });
  }

  put(key: string, value: string): Promise<void> {
    return this.#call(key, async () => {
      const res = await this.#client.kv.put({ key: this.#key(key), value: Buffer.from(value) });
      this.#saw(res.header.revision);
    });
  }

  delete(key: string): Promise<void> {
    return this.#call(key, async () => {
      const res = await this.#client.kv.deleteRange({ key: this.#key(key) });
      this.#saw(res.header.revision);
    });
  }

  list(prefix: string): Promise<Map<string, string>> {
    return this.#call(prefix, async () => {
      const start = this.#key(prefix);
      // A whole prefix may be megabytes (a large cluster's stored state): more time than a small call.
      const res = await this.#client.kv.range(
        { key: start, range_end: rangeEnd(start) },
        { deadline: Date.now() + LIST_DEADLINES * this.#deadlineMs },
      );
      this.#saw(res.header.revision);
      return new Map((res.kvs as Kv[]).map((kv) => [kv.key.toString().slice(this.prefix.length), kv.value.toString()]));
    });
  }

  watch(prefix: string, listener: (key: string, value: string | undefined, revision: number) => void): () => void {
    let stopped = false;
    let cancel: (() => void) | undefined;
    const relative = (kv: { key: Buffer }): string => kv.key.toString().slice(this.prefix.length);
    // The client re-establishes a watch after a disconnection on its own, from the revision it had
    // reached; one etcd cancels (its revision compacted away) is made again from now.
    const create = (): void => {
      this.#client
        .watch()
        .prefix(this.prefix + prefix)
        .create()
        .then(
          (watcher) => {
            watcher.on('put', (kv) => listener(relative(kv), kv.value.toString(), Number(kv.mod_revision)));
            // A delete's key-value carries the revision of the delete itself.
            watcher.on('delete', (kv) => listener(relative(kv), undefined, Number(kv.mod_revision)));
            watcher.on('error', () => {
              void watcher.cancel().catch(() => {});
              if (!stopped && !this.#closed) setTimeout(create, 100).unref?.();
            });
            cancel = () => void watcher.cancel().catch(() => {});
            if (stopped) cancel();
          },
          () => {
            if (!stopped && !this.#closed) setTimeout(create, 100).unref?.();
          },
        );
    };
    create();
    return () => {
      stopped = true;
      cancel?.();
    };
  }

  grantLease(ttlSeconds: number): Promise<StoreLease> {
    return this.#call(undefined, async () => {
      const res = await this.#client.leaseClient.leaseGrant({ TTL: ttlSeconds, ID: 0 });
      const id = res.ID;
      return {
        id,
        // etcd raises a TTL below its minimum (1.5 election timeouts): the granted one counts.
        ttlSeconds: Math.max(ttlSeconds, Number(res.TTL) || 0),
        keepAlive: () => this.#call(undefined, () => this.#renew(id)),
        revoke: async () => {
          await this.#client.leaseClient.leaseRevoke({ ID: id }).catch(() => {});
        },
      };
    });
  }

  claim(key: string, value: string, lease: StoreLease): Promise<Claim> {
    return this.#call(key, async () => {
      const full = this.#key(key);
      const res = await this.#client.kv.txn({
        compare: [{ key: full, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key: full, value: Buffer.from(value), lease: lease.id } }],
        failure: [{ request_range: { key: full } }],
      });
      this.#saw(res.header.revision);
      const revision = Number(res.header.revision);
      if (res.succeeded) return { created: true, holder: { value, lease: lease.id }, revision };
      const kv = res.responses[0]?.response_range?.kvs[0] as Kv | undefined;
      const holder = kv === undefined ? undefined : { value: kv.value.toString(), lease: kv.lease === '0' ? undefined : kv.lease };
      // A retried attempt finds the key the first one made (its answer was lost): still ours.
      return { created: holder?.lease === lease.id, holder, revision };
    });
  }

  commit(guard: Guard | undefined, puts: ReadonlyMap<string, string>, deletes: readonly string[]): Promise<boolean> {
    const named = puts.keys().next().value ?? deletes[0];
    return this.#call(named, async () => {
      const res = await this.#client.kv.txn({
        compare: guard === undefined ? [] : [{ key: this.#key(guard.key), target: 'Lease', result: 'Equal', lease: guard.lease }],
        success: [
          ...[...puts].map(([key, value]) => ({ request_put: { key: this.#key(key), value: Buffer.from(value) } })),
          ...deletes.map((key) => ({ request_delete_range: { key: this.#key(key) } })),
        ],
        failure: [],
      });
      this.#saw(res.header.revision);
      return res.succeeded;
    });
  }

  census(): Promise<{ refused: number; members: number }> {
    return Promise.all(this.#endpoints.map((endpoint) => refusesConnections(endpoint, this.#deadlineMs))).then((refused) => ({
      refused: refused.filter(Boolean).length,
      members: refused.length,
    }));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    this.#listeners.clear();
    this.#client.close();
  }

  #key(key: string): Buffer {
    return Buffer.from(this.prefix + key);
  }

  /** One keep-alive on a stream of its own, tried on other members while the one reached cannot answer. */
  async #renew(id: string): Promise<boolean> {
    let last: unknown;
    for (let attempt = 0; attempt < Math.max(2, this.#endpoints.length); attempt++) {
      try {
        return await this.#keepAliveOnce(id);
      } catch (err) {
        last = err;
        if (storeErrorReason(err) !== 'unreachable' || this.#closed) break;
      }
    }
    throw last;
  }

  async #keepAliveOnce(id: string): Promise<boolean> {
    const stream = await this.#client.leaseClient.leaseKeepAlive();
    return new Promise<boolean>((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.cancel();
        reject(new Error(`lease keep-alive: no answer within ${this.#deadlineMs} ms`));
      }, this.#deadlineMs);
      stream.on('data', (res) => {
        clearTimeout(timer);
        stream.end();
        this.#saw(res.header?.revision);
        resolve(Number(res.TTL) > 0);
      });
      stream.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      stream.write({ ID: id });
    });
  }

  async #probe(): Promise<void> {
    if (this.#closed) return;
    await this.#call(undefined, async () => {
      const status = await this.#client.maintenance.status();
      this.#dbSize = Number(status.dbSize);
      // An alarm raised by any member is in every member's answer; writes fail until it is disarmed.
      this.#noSpace = status.errors.some((e) => /NOSPACE|space exceeded/i.test(e));
      this.#saw(status.header.revision);
    }).catch(() => {});
  }

  async #compact(): Promise<void> {
    const target = this.#compactMark;
    this.#compactMark = this.#revision;
    if (this.#closed || target <= this.#compacted) return;
    try {
      await this.#client.kv.compact({ revision: target, physical: false });
      this.#compacted = target;
    } catch (err) {
      // Compacted further already (another controller), or unreachable: the next period tries again.
      if (/compacted/i.test(String(err))) this.#compacted = target;
    }
  }

  #saw(revision: string | undefined): void {
    const n = Number(revision ?? 0);
    if (n > this.#revision) this.#revision = n;
  }

  async #call<T>(key: string | undefined, fn: () => Promise<T>): Promise<T> {
    try {
      const value = await fn();
      this.#set(true);
      return value;
    } catch (err) {
      const error = err instanceof StoreError ? err : toStoreError(err, key);
      this.#errors[error.reason] += 1;
      if (error.reason === 'no_space') this.#noSpace = true;
      // Only silence is disconnection: a store that refused a write answered.
      this.#set(error.reason !== 'unreachable');
      throw error;
    }
  }

  #set(connected: boolean): void {
    if (this.#closed || connected === this.#connected) return;
    this.#connected = connected;
    for (const listener of this.#listeners) listener(connected);
  }
}

/**
 * Whether nothing listens on an endpoint's address: the connection is refused (a member whose
 * process is not running). A connection made, or one that times out or cannot route, is not a
 * refusal: that member may be serving others.
 * @example await refusesConnections('http://127.0.0.1:2379', 1000) // true when no etcd runs there
 */
export function refusesConnections(endpoint: string, timeoutMs: number): Promise<boolean> {
  let url: URL;
  try {
    url = new URL(endpoint.includes('://') ? endpoint : `http://${endpoint}`);
  } catch {
    return Promise.resolve(false);
  }
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 2379));
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (refused: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(refused);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(false));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED'));
  });
}
