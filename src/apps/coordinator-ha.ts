/**
 * A Coordinator among several on one etcd. Both modes read the last snapshot the controller
 * stored as soon as they start (and again when the store comes back, until a snapshot arrived),
 * so a Coordinator that starts or restarts is ready without waiting for the next push. In
 * `master_standby` (MindIE's backup_config) one Coordinator holds `coordinator/master_lock` and the
 * others answer readiness 503 "not master" until the lock lapses; the master keeps its title while
 * etcd is down (its members refuse connections; see election.ts). A standby still proxies the
 * requests that reach it, with the snapshot it holds (the controller pushes every snapshot to it
 * too): a load balancer routes by readiness, so only clients it has not yet moved, or that call a
 * standby directly, reach one, and they get answers, not errors. The cost is the one of
 * active/active: each Coordinator's ledger counts only its own requests.
 */
import type { ClusterRegistry } from '../cluster/registry.ts';
import type { Registry } from 'prom-client';
import { storedSnapshot } from '../controller/stored-state.ts';
import { validateRefresh } from '../schema/refresh.ts';
import { readChunked, type ChunkedRead } from '../store/chunked.ts';
import { Election } from '../store/election.ts';
import { storeMetrics } from '../store/metrics.ts';
import { KEYS, type Store } from '../store/store.ts';

export interface CoordinatorHaOptions {
  readonly mode: 'master_standby' | 'active_active';
  readonly store: Store;
  readonly registry: ClusterRegistry;
  readonly metrics: Registry;
  readonly ttlSeconds: number;
  readonly log?: (line: string) => void;
}

export class CoordinatorHa {
  readonly #options: CoordinatorHaOptions;
  #election: Election | undefined;
  readonly #stopConnected: () => void;
  #closed = false;

  /**
   * Reads the stored snapshot now (and again when the store comes back, until one is held).
   * @example const ha = new CoordinatorHa({ mode: 'master_standby', store, registry, metrics, ttlSeconds: 2 }); await ha.loadSnapshot(); ...; ha.campaign(url);
   */
  constructor(options: CoordinatorHaOptions) {
    this.#options = options;
    storeMetrics(options.metrics, options.store);
    this.#stopConnected = options.store.onConnected((connected) => {
      if (connected && options.registry.generation === 0) void this.loadSnapshot();
    });
  }

  /** master/standby: runs for master under this management URL (known once the listener is up). */
  campaign(url: string): void {
    if (this.#options.mode !== 'master_standby' || this.#election !== undefined || this.#closed) return;
    this.#election = new Election({
      store: this.#options.store,
      key: KEYS.coordinatorMaster,
      value: url,
      ttlSeconds: this.#options.ttlSeconds,
      holdWhileDisconnected: true,
      ...(this.#options.log === undefined ? {} : { log: this.#options.log }),
    });
    this.#election.start();
  }

  /** Readiness: a standby is not ready (MindIE: 503 "not master"). */
  notReadyReason(): string | undefined {
    if (this.#options.mode !== 'master_standby') return undefined;
    if (this.#election === undefined) return 'not master: joining the election';
    if (this.#election.leader) return undefined;
    return `not master: the master Coordinator is ${this.#election.holder ?? 'not elected yet'}`;
  }

  get master(): boolean | undefined {
    return this.#election?.leader;
  }

  /**
   * Applies the stored snapshot unless a push arrived first (a pushed one is newer); true if applied.
   * @example await ha.loadSnapshot();
   */
  async loadSnapshot(): Promise<boolean> {
    let read: ChunkedRead;
    try {
      read = await readChunked(await this.#options.store.list(KEYS.controllerState), KEYS.controllerState);
    } catch {
      return false;
    }
    if (this.#closed || this.#options.registry.generation > 0) return false;
    if (!read.ok) {
      this.#options.log?.(`no stored snapshot to start from (${read.reason})`);
      return false;
    }
    const body = storedSnapshot(read.records);
    if (body === undefined) return false;
    const result = validateRefresh(body);
    if (!result.ok) {
      this.#options.log?.(`stored snapshot refused: ${result.issues[0]?.path ?? ''} ${result.issues[0]?.message ?? ''}`);
      return false;
    }
    this.#options.registry.apply(result.snapshot);
    this.#options.log?.(`snapshot loaded from the store (${result.snapshot.instances.length} instances)`);
    return true;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopConnected();
    await this.#election?.close();
    await this.#options.store.close();
  }
}
