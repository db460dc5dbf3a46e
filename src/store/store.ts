/**
 * The one place pdlink keeps state that must outlive a process or be shared between processes: the
 * controller's stored state, the last snapshot, the leader and master keys. Two implementations
 * behind this interface: in memory (the embedded default, one process, nothing shared) and etcd
 * (several controllers and Coordinators). Keys are relative; each store puts them under
 * `/pdlink/<cluster>/`. Calls reject with a StoreError (store-error.ts) that names the key.
 */
import type { StoreErrorReason } from './store-error.ts';

/** A lease: keys bound to it vanish when it is not renewed within its TTL, or when it is revoked. */
export interface StoreLease {
  readonly id: string;
  readonly ttlSeconds: number;
  /**
   * Renews the lease: true when renewed, false when the store says it is gone (lapsed or
   * revoked); rejects (reason `unreachable`) when no member answered.
   */
  keepAlive(): Promise<boolean>;
  /** Ends the lease and its keys; best effort. */
  revoke(): Promise<void>;
}

/** A key's value and the lease it is bound to (undefined: none). */
export interface HeldKey {
  readonly value: string;
  readonly lease: string | undefined;
}

export interface Claim {
  readonly created: boolean;
  readonly holder: HeldKey | undefined;
  readonly revision: number;
}

/** A transaction applies only while `key` is bound to `lease`: the writer still holds its title. */
export interface Guard {
  readonly key: string;
  readonly lease: string;
}

/** What the store's metrics read at scrape time. */
export interface StoreHealth {
  readonly connected: boolean;
  /** etcd raised its NOSPACE alarm (or refused a write for it): writes fail until an operator frees space. */
  readonly noSpace: boolean;
  /** Failed calls since start, by reason. */
  readonly errors: Readonly<Record<StoreErrorReason, number>>;
  /** The database's size on the member last asked (etcd), undefined when unknown. */
  readonly dbSizeBytes: number | undefined;
}

export interface Store {
  readonly kind: 'memory' | 'etcd';
  /** The absolute prefix every key lives under, e.g. `/pdlink/default/`. */
  readonly prefix: string;
  /** Whether the store answered its last call (an answer that refuses counts: only silence is disconnection). */
  connected(): boolean;
  /** Calls `listener` on every change of `connected()`; returns the unsubscribe. */
  onConnected(listener: (connected: boolean) => void): () => void;
  health(): StoreHealth;
  get(key: string): Promise<string | undefined>;
  /** The key's value and lease, or undefined when it does not exist. */
  held(key: string): Promise<HeldKey | undefined>;
  put(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every key under `prefix` (relative keys) with its value, read at one revision. */
  list(prefix: string): Promise<Map<string, string>>;
  /**
   * Calls `listener` on every put (value) and delete (undefined) of a key under `prefix`, with the
   * store's revision of the change; returns the stop.
   */
  watch(prefix: string, listener: (key: string, value: string | undefined, revision: number) => void): () => void;
  /** Grants a lease of `ttlSeconds`. */
  grantLease(ttlSeconds: number): Promise<StoreLease>;
  /**
   * Creates `key` = `value` bound to `lease` unless the key exists; the holder either way, and the
   * store's revision when the claim was answered.
   * @example const { created, holder } = await store.claim('controller/leader', url, lease);
   */
  claim(key: string, value: string, lease: StoreLease): Promise<Claim>;
  /**
   * One transaction: when `guard` holds (or is undefined), every put and delete; resolves false,
   * changing nothing, when the guard does not hold.
   * @example if (!(await store.commit({ key: KEYS.controllerLeader, lease }, puts, deletes))) standDown();
   */
  commit(guard: Guard | undefined, puts: ReadonlyMap<string, string>, deletes: readonly string[]): Promise<boolean>;
  /**
   * How many of the store's members refuse connections now (no process listens on the address), of
   * how many: members that are not running can give a key to nobody, so a holder may ride out an
   * outage that leaves no quorum (election.ts). A member that does not answer is not counted: it may
   * be serving others. Absent where the store cannot go down apart from its own process (memory).
   */
  census?(): Promise<{ refused: number; members: number }>;
  close(): Promise<void>;
}

/** The keys pdlink uses, relative to the cluster prefix. */
export const KEYS = {
  controllerLeader: 'controller/leader',
  /** The controller's stored state: a manifest and the chunks it names (see controller/state-chunks.ts). */
  controllerState: 'controller/state/',
  /** MindIE's `/coordinator/master_lock`, under the cluster prefix. */
  coordinatorMaster: 'coordinator/master_lock',
} as const;

/** Keys an earlier layout kept whole (one value for the whole cluster); a leader deletes them. */
export const LEGACY_KEYS: readonly string[] = ['controller/desired', 'controller/file', 'controller/assignments', 'snapshot'];

/**
 * The absolute key prefix of a cluster.
 * @example prefixOf('default') // '/pdlink/default/'
 */
export function prefixOf(cluster: string): string {
  return `/pdlink/${cluster}/`;
}
