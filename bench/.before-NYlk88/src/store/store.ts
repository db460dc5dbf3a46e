/**
 * The one place pdlink keeps state that must outlive a process or be shared between processes: the
 * desired topology, role assignments, the last snapshot, leader keys. Two implementations behind
 * this interface: in memory (the embedded default, one process, nothing shared) and etcd (several
 * controllers and Coordinators). Keys are relative; each store puts them under `/pdlink/<cluster>/`.
 */

/** A lease: keys created under it vanish when it is not renewed within its TTL. */
export interface StoreLease {
  readonly id: string;
  /**
   * Renews the lease: true when renewed, false when the store says it is gone (expired or
   * revoked); rejects when the store cannot be reached.
   */
  keepAlive(): Promise<boolean>;
  /**
   * Creates `key` = `value` bound to this lease unless the key exists; the holder's value either way.
   * @example const { created, holder } = await lease.createIfAbsent('controller/leader', url);
   */
  createIfAbsent(key: string, value: string): Promise<{ created: boolean; holder: string | undefined }>;
  /** Ends the lease and its keys; best effort. */
  revoke(): Promise<void>;
}

export interface Store {
  readonly kind: 'memory' | 'etcd';
  /** The absolute prefix every key lives under, e.g. `/pdlink/default/`. */
  readonly prefix: string;
  /** Whether the last exchange with the store succeeded (memory: always). */
  connected(): boolean;
  /** Calls `listener` on every change of `connected()`; returns the unsubscribe. */
  onConnected(listener: (connected: boolean) => void): () => void;
  get(key: string): Promise<string | undefined>;
  put(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every key under `prefix` (relative keys) with its value. */
  list(prefix: string): Promise<Map<string, string>>;
  /** Calls `listener` on every put (value) and delete (undefined) of a key under `prefix`; returns the stop. */
  watch(prefix: string, listener: (key: string, value: string | undefined) => void): () => void;
  /** Grants a lease of `ttlSeconds`; rejects when the store cannot be reached. */
  grantLease(ttlSeconds: number): Promise<StoreLease>;
  close(): Promise<void>;
}

/** The keys pdlink uses, relative to the cluster prefix. */
export const KEYS = {
  controllerLeader: 'controller/leader',
  desired: 'controller/desired',
  /** The topology file's instances as the leader last loaded them. */
  file: 'controller/file',
  assignments: 'controller/assignments',
  snapshot: 'snapshot',
  /** MindIE's `/coordinator/master_lock`, under the cluster prefix. */
  coordinatorMaster: 'coordinator/master_lock',
} as const;

/**
 * The absolute key prefix of a cluster.
 * @example prefixOf('default') // '/pdlink/default/'
 */
export function prefixOf(cluster: string): string {
  return `/pdlink/${cluster}/`;
}
