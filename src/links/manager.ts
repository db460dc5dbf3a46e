/**
 * The link manager: LLM-DataDist link semantics over an injected executor. It owns the state of
 * every link per (local endpoint, remote cluster), coalesces concurrent requests into runtime
 * calls of ≤ 16 clusters, and follows runtime events. What should be linked is its callers' to say
 * (diff.ts computes the difference; the role driver applies it).
 */
import { optionErrors } from '../core/errors.ts';
import { Batcher, type BatchKey, type ItemOutcome } from './batcher.ts';
import type { IpPort } from './endpoint.ts';
import { createLinkMetrics, type LinkMetrics } from './metrics.ts';
import { CallTimeline } from './call-timeline.ts';
import { LLM_STATUS } from '../core/llm-status.ts';
import { applyRuntimeEvent } from './runtime-events.ts';
import { LinkTable, type LinkListener } from './table.ts';
import type { CallResult, ClusterTarget, EndpointTarget, LinkExecutor, LinkInfo, RuntimeLinkEvent } from './types.ts';
import {
  callError,
  DEFAULT_BATCH_WINDOW_MS,
  DEFAULT_TIMEOUT_MS,
  LINK_SETTLED,
  MAX_CLUSTERS_PER_CALL,
  UNLINK_SETTLED,
  type LinkManagerOptions,
  type LinkOptions,
  type UnlinkOptions,
} from './call-rules.ts';

export { DEFAULT_BATCH_WINDOW_MS, DEFAULT_TIMEOUT_MS, MAX_CLUSTERS_PER_CALL } from './call-rules.ts';
export type { LinkManagerOptions, LinkOptions, UnlinkOptions } from './call-rules.ts';

/** Timeouts whose batch keys are kept. */
const KEY_CACHE_TIMEOUTS = 16;

export class LinkManager {
  readonly #executor: LinkExecutor;
  readonly #endpoints: ReadonlySet<string>;
  readonly #defaultEndpoint: string;
  readonly #table: LinkTable;
  readonly #batcher: Batcher;
  readonly #metrics: LinkMetrics;
  /** Calls in flight, and who waits for there to be none (`idle()`). */
  #inflight = 0;
  #idleWaiters: (() => void)[] = [];
  readonly #localAddresses: ReadonlyMap<string, IpPort>;
  readonly #now: () => number;
  readonly #timeline = new CallTimeline();
  /** The default endpoint's batch keys by timeout, `[link, unlink, forced unlink]`: one object per key, so the batcher knows it. */
  readonly #defaultKeys = new Map<number, BatchKey[]>();

  constructor(options: LinkManagerOptions) {
    const maxBatch = options.maxBatch ?? MAX_CLUSTERS_PER_CALL;
    if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > MAX_CLUSTERS_PER_CALL) {
      throw new RangeError(`maxBatch must be an integer in [1, ${MAX_CLUSTERS_PER_CALL}]`);
    }
    const windowMs = options.batchWindowMs ?? DEFAULT_BATCH_WINDOW_MS;
    if (!Number.isFinite(windowMs) || windowMs < 0) throw new RangeError('batchWindowMs must be a non-negative number');
    const parallelCalls = options.parallelCalls ?? 1;
    if (!Number.isInteger(parallelCalls) || parallelCalls < 1) throw new RangeError('parallelCalls must be a positive integer');
    const first = options.endpoints[0];
    if (first === undefined) throw new RangeError('endpoints must name at least one local endpoint');
    this.#executor = options.executor;
    this.#endpoints = new Set(options.endpoints);
    this.#defaultEndpoint = first;
    this.#now = options.now ?? Date.now;
    this.#table = new LinkTable(this.#now);
    this.#localAddresses = options.localAddresses ?? new Map();
    this.#metrics = createLinkMetrics(options.registry, this.#table);
    this.#batcher = new Batcher({ maxBatch, windowMs, parallelCalls, run: (key, clusters) => this.#runBatch(key, clusters) });
  }

  /** Local endpoint names, default first. */
  get endpoints(): string[] {
    return [this.#defaultEndpoint, ...[...this.#endpoints].filter((e) => e !== this.#defaultEndpoint)];
  }

  /**
   * Links to up to 16 clusters; `rets` holds one code per cluster in input order, `ret` is
   * LLM_SUCCESS only when all succeeded.
   * @example const { ret, rets } = await manager.linkClusters([{ remoteClusterId: 7n, remote: { ip: '127.0.0.2', port: 26000 } }], { timeoutMs: 3000 });
   */
  linkClusters(clusters: readonly EndpointTarget[], options: LinkOptions = {}): Promise<CallResult> {
    return this.#call('link', clusters, options.timeoutMs, false, (target, endpoint, key) => this.#linkOne(target, endpoint, key));
  }

  /**
   * Unlinks up to 16 clusters; `force` clears only the local end (the peer must unlink too).
   * @example await manager.unlinkClusters(clusters, { timeoutMs: 3000, force: true });
   */
  unlinkClusters(clusters: readonly EndpointTarget[], options: UnlinkOptions = {}): Promise<CallResult> {
    const force = options.force ?? false;
    return this.#call('unlink', clusters, options.timeoutMs, force, (target, endpoint, key) => this.#unlinkOne(target, endpoint, key));
  }

  /**
   * Applies an event of the runtime (dead peer, server-side link or unlink, unusable link); false
   * when the event is older than the last call that settled its link, which already saw its effect
   * (the event is then ignored, here and by anyone who follows the manager).
   * @example manager.handleRuntimeEvent('0', { kind: 'peer-lost', side: 'server', remoteClusterId: 7n, code: 0 });
   */
  handleRuntimeEvent(endpoint: string, event: RuntimeLinkEvent): boolean {
    return applyRuntimeEvent(this.#table, this.#timeline, endpoint, event);
  }

  /**
   * Records the peer address of a server-side link, which the link event does not carry.
   * @example manager.noteRemote('0', 7n, { ip: '127.0.0.3', port: 41234 });
   */
  noteRemote(endpoint: string, remoteClusterId: bigint, remote: IpPort): void {
    const entry = this.#table.get(endpoint, remoteClusterId);
    if (entry?.side === 'server' && entry.remote === undefined)
      this.#table.set(endpoint, remoteClusterId, { state: entry.state, code: entry.code, remote, reason: 'peer-address' });
  }

  /** Every link the manager knows, client and server side. */
  list(): LinkInfo[] {
    return this.#table.list();
  }

  get(endpoint: string, remoteClusterId: bigint): LinkInfo | undefined {
    return this.#table.get(endpoint, remoteClusterId);
  }

  /** Subscribes to state changes; returns the unsubscribe function. */
  onChange(listener: LinkListener): () => void {
    return this.#table.onChange(listener);
  }

  /** Resolves when every call in flight has finished. */
  idle(): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async #call(
    op: 'link' | 'unlink',
    clusters: readonly EndpointTarget[],
    timeoutMs: number | undefined,
    force: boolean,
    one: (target: ClusterTarget, endpoint: string, key: BatchKey) => Promise<number>,
  ): Promise<CallResult> {
    const started = performance.now();
    const whole = callError(clusters.length, timeoutMs);
    if (whole !== undefined) return { ret: whole, rets: clusters.map(() => whole) };
    const timeout = timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // Most calls name only the default endpoint: its keys are made once.
    const defaultKey = this.#defaultKey(op, timeout, force);
    const each = (target: EndpointTarget): Promise<number> => {
      const endpoint = target.endpoint ?? this.#defaultEndpoint;
      if (endpoint === this.#defaultEndpoint) return one(target, endpoint, defaultKey);
      if (!this.#endpoints.has(endpoint)) return Promise.resolve(LLM_STATUS.LLM_PARAM_INVALID);
      return one(target, endpoint, { endpoint, op, timeoutMs: timeout, force });
    };
    this.#inflight++;
    let rets: number[];
    try {
      // A lone cluster (each caller of a batch, often) needs no Promise.all around its one promise.
      rets = clusters.length === 1 ? [await each(clusters[0]!)] : await Promise.all(clusters.map(each));
    } finally {
      if (--this.#inflight === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    }
    this.#metrics.observeCall(op, (performance.now() - started) / 1000);
    let ret: number = LLM_STATUS.LLM_SUCCESS;
    for (const r of rets) if (r !== LLM_STATUS.LLM_SUCCESS) ret = LLM_STATUS.LLM_FAILED;
    return { ret, rets };
  }

  #defaultKey(op: 'link' | 'unlink', timeoutMs: number, force: boolean): BatchKey {
    let keys = this.#defaultKeys.get(timeoutMs);
    if (keys === undefined) {
      // Callers may pick any timeout: the cache is bounded by starting over.
      if (this.#defaultKeys.size >= KEY_CACHE_TIMEOUTS) this.#defaultKeys.clear();
      const endpoint = this.#defaultEndpoint;
      keys = [
        { endpoint, op: 'link', timeoutMs, force: false },
        { endpoint, op: 'unlink', timeoutMs, force: false },
        { endpoint, op: 'unlink', timeoutMs, force: true },
      ];
      this.#defaultKeys.set(timeoutMs, keys);
    }
    // Links are never forced (linkClusters passes false).
    return op === 'link' ? keys[0]! : keys[force ? 2 : 1]!;
  }

  async #linkOne(target: ClusterTarget, endpoint: string, key: BatchKey): Promise<number> {
    const id = target.remoteClusterId;
    const entry = this.#table.get(endpoint, id);
    if (entry?.state === 'linking' || entry?.state === 'unlinking') return LLM_STATUS.LLM_PROCESSING_LINK;
    if (entry?.state === 'linked') return LLM_STATUS.LLM_ALREADY_LINK;
    this.#table.set(endpoint, id, { state: 'linking', side: 'client', remote: target.remote, reason: 'link' });
    const local = target.local ?? this.#localAddresses.get(endpoint);
    const outcome = await this.#batcher.push(key, local === undefined ? target : { ...target, local });
    // The runtime may have lost the link the call made before the answer got here.
    const drop = this.#timeline.end(endpoint, id);
    if (outcome.indeterminate) return this.#abandonLink(target, endpoint, key, outcome);
    // SUCCESS: this call made it. ALREADY_LINK with a holder: this runtime holds it (made by a call
    // or a peer whose news is not in yet). Either way linked, unless lost since.
    const holder =
      outcome.code === LLM_STATUS.LLM_SUCCESS ? 'client' : outcome.code === LLM_STATUS.LLM_ALREADY_LINK ? outcome.holder : undefined;
    if (holder !== undefined && drop !== undefined) {
      this.#table.set(endpoint, id, { state: 'failed', reason: drop.reason, code: drop.code });
    } else if (holder !== undefined) {
      this.#table.set(endpoint, id, { state: 'linked', side: holder, reason: 'link' });
    } else {
      // Including ALREADY_LINK from a peer that still holds its end of an earlier link (a forced
      // unlink here, not there): the peer refused, this runtime holds nothing, the link failed.
      this.#table.set(endpoint, id, { state: 'failed', reason: 'link', code: outcome.code });
    }
    return outcome.code;
  }

  /** A link call whose outcome is unknown: clear whatever the runtime may hold, then fail it. */
  async #abandonLink(target: ClusterTarget, endpoint: string, key: BatchKey, outcome: ItemOutcome): Promise<number> {
    const id = target.remoteClusterId;
    console.error(`pdlink: link to cluster ${id} on endpoint ${endpoint} failed: ${outcome.message ?? 'outcome unknown'}`);
    this.#table.set(endpoint, id, { state: 'unlinking', reason: 'worker-failed', code: outcome.code });
    await this.#batcher.push({ ...key, op: 'unlink', force: true }, target);
    this.#table.set(endpoint, id, { state: 'failed', reason: 'worker-failed', code: outcome.code });
    return outcome.code;
  }

  async #unlinkOne(target: ClusterTarget, endpoint: string, key: BatchKey): Promise<number> {
    const id = target.remoteClusterId;
    const entry = this.#table.get(endpoint, id);
    if (entry?.state === 'linking' || entry?.state === 'unlinking') return LLM_STATUS.LLM_PROCESSING_LINK;
    // Without an entry the runtime is still asked: it may hold a link whose event is not in yet.
    if (entry !== undefined) this.#table.set(endpoint, id, { state: 'unlinking', reason: 'unlink', code: entry.code });
    const outcome = await this.#batcher.push(key, target);
    const code = outcome.code;
    if (outcome.indeterminate)
      console.error(`pdlink: unlink of cluster ${id} on endpoint ${endpoint} failed: ${outcome.message ?? 'outcome unknown'}`);
    if (entry === undefined) {
      if (code === LLM_STATUS.LLM_SUCCESS) this.#table.set(endpoint, id, { state: 'unlinked', reason: 'unlink' });
    } else if (
      !outcome.indeterminate &&
      (code === LLM_STATUS.LLM_SUCCESS || code === LLM_STATUS.LLM_NOTIFY_PROMPT_UNLINK_FAILED || code === LLM_STATUS.LLM_NOT_YET_LINK)
    ) {
      // NOTIFY_PROMPT_UNLINK_FAILED: the local end is cleared; only the peer still holds it.
      this.#table.set(endpoint, id, { state: 'unlinked', reason: 'unlink', code });
      // A forced unlink asks only that the local end be clear. The runtime may have dropped a listed
      // link already (the peer's own forced unlink or loss closed it, a relink was refused): clear
      // now, as both ends calling it must find it (seed 003), so the call succeeded.
      if (key.force && code === LLM_STATUS.LLM_NOT_YET_LINK) return LLM_STATUS.LLM_SUCCESS;
    } else if (!outcome.indeterminate && (code === LLM_STATUS.LLM_LINK_BUSY || code === LLM_STATUS.LLM_PROCESSING_LINK)) {
      this.#table.set(endpoint, id, { state: entry.state, reason: 'unlink', code: entry.code });
    } else {
      this.#table.set(endpoint, id, { state: 'failed', reason: outcome.indeterminate ? 'worker-failed' : 'unlink', code });
    }
    return code;
  }

  async #runBatch(key: BatchKey, clusters: readonly ClusterTarget[]) {
    const started = performance.now();
    const startedAt = this.#now();
    if (key.op === 'link') for (const c of clusters) this.#timeline.begin(key.endpoint, c.remoteClusterId, startedAt);
    const outcome =
      key.op === 'link'
        ? await this.#executor.link(key.endpoint, clusters, key.timeoutMs)
        : await this.#executor.unlink(key.endpoint, clusters, key.timeoutMs, key.force);
    if (!outcome.indeterminate) {
      const settles = key.op === 'link' ? LINK_SETTLED : UNLINK_SETTLED;
      clusters.forEach((c, i) => {
        if (settles.has(outcome.rets[i] ?? LLM_STATUS.LLM_FAILED)) this.#timeline.record(key.endpoint, c.remoteClusterId, startedAt);
      });
    }
    this.#metrics.observeBatch(key.op, clusters.length, (performance.now() - started) / 1000);
    return outcome;
  }
}
