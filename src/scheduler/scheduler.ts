/**
 * The PD scheduler: places each request on a (prefill, decode) pair. P is chosen first, by the
 * prefill policy, among the P's that can take a request now and have at least one linked D that
 * can too; D is then chosen by the decode policy among that P's linked D's only (same group, and
 * D lists P among its peers: MindIE's rule). Role-`undefined` instances are never scheduled;
 * instances whose circuit is open are skipped; a half-open instance gets one trial at a time.
 * When open circuits are all that stands between a request and a pair, one of them is given its
 * trial now rather than answering 503 for the rest of its cool-down; and every accepted refresh
 * gives the open instances it lists a trial (the Controller saw them alive, e.g. restarted).
 * An instance with `maxRequestsPerInstance` requests of this process on it is full.
 *
 * All the work of keeping candidates ordered happens when topology, loads or circuits change
 * (see topology.ts); a pick walks only the head of a pool, whatever the cluster size.
 */
import { errors } from '../core/errors.ts';
import { trialEarly } from './early-trial.ts';
import { type CircuitBreakers, createBreakers } from './breakers.ts';
import { diagnose, failureMessage } from './failures.ts';
import { type LoadSource, NO_RESERVATIONS } from './loads.ts';
import { choosePath, type LocalPrefillRule, type PdPath, prefillQueues, uncachedTokens } from './pd-path.ts';
import { SchedulerMetrics } from './metrics.ts';
import type { SchedulerNode } from './node.ts';
import { blockSizeArg, type SchedulerOptions } from './options.ts';
import type { Policy } from './policies/index.ts';
import type { KvHits } from './kv-hits.ts';
import { holdingDecode, leastLoadedDecode, localPair, PREFILL_SIDE } from './decode-first.ts';
import { setUpPolicies } from './policy-setup.ts';
import { prefixHashes } from './prefix-hash.ts';
import type { PrefixIndex } from './prefix-index.ts';
import { blocksNeeded, type CheckedRequest, checkPickRequest } from './request.ts';
import { Topology, type TopologyCounts } from './topology.ts';
import { decodeOnlyContext, NO_HASHES, PairWalk } from './walk.ts';
import { type Pair, type PickFailure, type PickFailureReason, type PickRequest, type PickResult, type PolicyChoice } from './types.ts';

export type { SchedulerOptions } from './options.ts';

export class PdScheduler {
  readonly policy: PolicyChoice;
  readonly health: CircuitBreakers;
  readonly #topology: Topology;
  readonly #prefill: Policy;
  readonly #decode: Policy;
  readonly #prefix: PrefixIndex | undefined;
  readonly #blockSize: number;
  readonly #rng: () => number;
  readonly #metrics: SchedulerMetrics | undefined;
  /** The proxy hands one request object to pick() and recordPrefill(): hashed once. */
  readonly #hashes = new WeakMap<object, readonly number[]>();
  readonly #unsubscribe: () => void;
  readonly #loads: LoadSource;
  readonly #localPrefill: LocalPrefillRule;
  /** precise_prefix: the pick's KV hits. */
  readonly #hits: KvHits | undefined;
  readonly #loadWeight: number;
  readonly #decodeFirst: boolean;
  readonly #walkHashes: boolean;

  constructor(options: SchedulerOptions) {
    if (typeof options !== 'object' || options === null) throw errors.invalidArgument('options', 'must be an object');
    if (typeof options.cluster?.onChange !== 'function')
      throw errors.invalidArgument('cluster', 'must be a cluster view (get, all, byRole, onChange)');
    this.#blockSize = blockSizeArg(options.blockSize);
    if (options.rng !== undefined && typeof options.rng !== 'function')
      throw errors.invalidArgument('rng', 'must be a function returning a number in [0, 1)');
    this.#rng = options.rng ?? Math.random;
    this.health = options.health ?? createBreakers();
    this.#loads = options.loads ?? NO_RESERVATIONS;
    this.#localPrefill = options.localPrefill ?? {};
    const setup = setUpPolicies(options, (id) => this.#topology.get(id));
    this.policy = setup.choice;
    this.#prefix = setup.prefix;
    this.#hits = setup.hits;
    this.#loadWeight = setup.loadWeight;
    this.#decodeFirst = setup.decodeFirst;
    this.#walkHashes = setup.walkHashes;
    this.#prefill = setup.prefill;
    this.#decode = setup.decode;
    const maxRequests = options.maxRequestsPerInstance;
    if (maxRequests !== undefined && (!Number.isSafeInteger(maxRequests) || maxRequests < 1))
      throw errors.invalidArgument('maxRequestsPerInstance', 'must be a positive integer');
    this.#topology = new Topology({
      cluster: options.cluster,
      loads: options.loads ?? NO_RESERVATIONS,
      breakers: this.health,
      ...(maxRequests === undefined ? {} : { maxRequests }),
      onRemove: (node) => this.#prefix?.forget(node.id),
    });
    const cluster = options.cluster;
    const listed = (id: number): boolean => cluster.get(id) !== undefined;
    this.#unsubscribe = cluster.onRefresh?.(() => this.health.relisted(listed)) ?? (() => {});
    this.#metrics =
      options.metrics === undefined
        ? undefined
        : new SchedulerMetrics(options.metrics, this.policy, setup.reasons, {
            ids: () => [...this.#topology.nodes()].map((n) => n.id),
            breakers: this.health,
          });
  }

  /**
   * Chooses a (P, D) pair for a request, or says why there is none. Sending the request is the
   * caller's business; so are reserving capacity (KV ledger) and reporting the outcome (health).
   * @throws PdlinkError `bad_request` naming the field of a malformed request.
   * @example const pick = scheduler.pick({ promptTokens, excludeP: new Set([failedP]) }); if (pick.ok) send(pick.p, pick.d);
   */
  pick(request: PickRequest = {}): PickResult {
    const checked = checkPickRequest(request);
    // Circuits whose cool-down ended become half-open here; the topology hears of it before the walk.
    this.health.poll();
    this.#hits?.begin(checked.promptTokens, () => this.#hashesOf(checked, request), this.#blockSize);
    if (this.#decodeFirst) {
      const d = holdingDecode(this.#topology, this.#hits!, checked, this.#localPrefill.maxLocalPrefillLength ?? 0, this.#loadWeight);
      if (d !== undefined) return this.#local(d, 'cache_hit');
    }
    let result = this.#walk(checked, request);
    // At most one early trial per role (a P, then a D), each only when open circuits are the obstacle.
    for (let trials = 0; typeof result === 'string' && TRIAL_REASONS.has(result) && trials < 2; trials++) {
      if (trialEarly(this.#topology, this.health, checked) === undefined) break;
      result = this.#walk(checked, request);
    }
    // Decode-first: no P can take it, so D prefills it.
    const spare =
      typeof result === 'string' && this.#decodeFirst && PREFILL_SIDE.has(result) ? leastLoadedDecode(this.#topology, checked) : undefined;
    if (spare !== undefined) return this.#local(spare, 'prefill_saturated');
    if (typeof result === 'string')
      return this.#fail(result === 'no_capacity' && this.#topology.capsBlock() ? 'instance_cap' : result, checked);
    const pair = this.#chosen(result.p!, result.d!, result.pickedReason, result.pickedBlocks);
    const path = this.#pathOf(checked, result.pickedBlocks, result.p!.id);
    return path === 'local' ? { ...pair, path } : pair;
  }

  /**
   * Counts a request that went `path` (the proxy calls it once the request's capacity is held).
   * @example scheduler.recordPath('local');
   */
  recordPath(path: PdPath): void {
    this.#metrics?.path(path);
  }

  /** Conditional disaggregation: the uncached part is what cache affinity does not know P to hold. */
  #pathOf(checked: CheckedRequest, matchedBlocks: number, pId: number): PdPath {
    const rule = this.#localPrefill;
    if (rule.maxLocalPrefillLength === undefined && rule.maxPrefillQueueSize === undefined) return 'disaggregated';
    // precise_prefix counts P's cached tokens in P's block size; cache_affinity counts its hash blocks.
    const cached = this.#hits !== undefined ? this.#hits.tokensOf(pId) : matchedBlocks * this.#blockSize;
    const queues = rule.maxPrefillQueueSize === undefined ? [] : prefillQueues(this.#topology.nodes(), this.#loads);
    return choosePath(rule, uncachedTokens(checked.promptTokenCount ?? checked.promptTokens?.length, cached), queues);
  }

  /** The walk that chose a pair (its p and d set), or why there is none. */
  #walk(checked: CheckedRequest, request: PickRequest): PairWalk | PickFailureReason {
    const prefills = this.#topology.prefills;
    if (prefills.size === 0) return diagnose(this.#topology.counts());
    const hashes = this.#walkHashes ? this.#hashesOf(checked, request) : NO_HASHES;
    const pWalk = new PairWalk(this.#rng, hashes, checked, checked.excludeP, undefined);
    const dWalk = new PairWalk(this.#rng, NO_HASHES, checked, checked.excludeD, pWalk);
    // The usual pick: the first P of the order fits, and so does the first of its D's. The walk
    // below would end at the same pair, after two generators each.
    // Only when both policies can say their first member: otherwise P's would be worked out twice.
    const prefill = this.#prefill;
    const decode = this.#decode;
    if (prefill.first !== undefined && decode.first !== undefined) {
      const p = prefill.first(prefills, pWalk);
      if (p !== undefined && pWalk.fits(p)) {
        const d = decode.first(p.decodes, dWalk);
        if (d !== undefined && dWalk.fits(d)) return pWalk.chose(p, d);
      }
    }
    for (const p of this.#prefill.order(prefills, pWalk)) {
      if (!pWalk.fits(p)) continue;
      // What the P policy said of p stays as it is while p's D's are walked (on the D side).
      for (const d of this.#decode.order(p.decodes, dWalk)) if (dWalk.fits(d)) return pWalk.chose(p, d);
    }
    return pWalk.excludedAny && !pWalk.lackedRoom ? 'excluded' : 'no_capacity';
  }

  /**
   * Chooses another D for a request whose P already answered: among P's linked D's (same group, D
   * lists P), as pick() would, with one early trial when only open circuits stand in the way.
   * P's own circuit does not matter: its part is done.
   * @throws PdlinkError `bad_request` naming the field of a malformed request.
   * @example const next = scheduler.pickDecode(pair.p.id, { excludeD: new Set([failedD]) });
   */
  pickDecode(pId: number, request: PickRequest = {}): PickResult {
    const checked = checkPickRequest(request);
    this.health.poll();
    const p = this.#topology.get(pId);
    if (p === undefined || p.role !== 'prefill') return this.#fail('no_prefill', checked);
    // precise_prefix orders D's by this request's prompt (keyed at the pick: only matched).
    this.#hits?.begin(checked.promptTokens, () => this.#hashesOf(checked, request), this.#blockSize);
    const walk = (): SchedulerNode | PickFailureReason => {
      let excluded = false;
      const dContext = decodeOnlyContext(this.#rng, checked.excludeD);
      for (const d of this.#decode.order(p.decodes, dContext)) {
        if (checked.excludeD.has(d.id)) {
          excluded = true;
          continue;
        }
        if (d.freeBlocks >= blocksNeeded(checked, d.instance)) return d;
      }
      if (excluded) return 'excluded';
      return p.healthyLinks === 0 ? 'no_healthy_decode' : 'no_capacity';
    };
    let d = walk();
    if (typeof d === 'string' && d !== 'no_capacity') {
      const open = [...p.links].filter((node) => !checked.excludeD.has(node.id)).map((node) => node.id);
      if (this.health.trialEarly(open) !== undefined) d = walk();
    }
    if (typeof d === 'string') {
      const capped = [...p.links].some((node) => node.capped && node.admissible && !checked.excludeD.has(node.id));
      return this.#fail(capped ? 'instance_cap' : d, checked);
    }
    // Only D's trial starts here; a selection of the pair was counted when P was chosen.
    this.health.admit(d.id);
    return { ok: true, p: p.instance, d: d.instance, policy: this.policy, reason: 'least_load', matchedBlocks: 0 };
  }

  /**
   * Like pick(), but throws when there is no pair.
   * @throws PdlinkError `unavailable` (503) naming why, `bad_request` for a malformed request.
   * @example const { p, d } = scheduler.pickOrThrow({ promptTokens });
   */
  pickOrThrow(request: PickRequest = {}): Pair {
    const result = this.pick(request);
    if (!result.ok) throw errors.unavailable(result.message);
    return result;
  }

  /**
   * Records that P prefilled this request successfully, so later requests sharing its prefix
   * prefer P (cache_affinity only; a no-op for other policies and for unknown instances).
   * @example scheduler.recordPrefill(pair.p.id, request);
   */
  recordPrefill(pId: number, request: PickRequest): void {
    if (this.#prefix === undefined) return;
    if (!Number.isSafeInteger(pId) || pId < 0) throw errors.invalidArgument('pId', 'must be an instance id');
    const node = this.#topology.get(pId);
    // One that publishes KV events is scored from them: a record would never be read.
    if (node === undefined || node.role !== 'prefill' || this.#hits?.exact(pId) === true) return;
    this.#prefix.record(pId, this.#hashesOf(checkPickRequest(request), request), node.instance.totalBlocks);
  }

  /**
   * How many instances are registered, linked, healthy and schedulable now.
   * @example scheduler.counts().schedulablePrefill
   */
  counts(): TopologyCounts {
    return this.#topology.counts();
  }

  /**
   * Stops following the cluster, the loads and the circuits; picks after close() see a frozen topology.
   * @example scheduler.close();
   */
  close(): void {
    this.#unsubscribe();
    this.#topology.close();
  }

  #chosen(p: SchedulerNode, d: SchedulerNode, reason: Pair['reason'], matchedBlocks: number): Pair {
    const pair: Pair = { ok: true, p: p.instance, d: d.instance, policy: this.policy, reason, matchedBlocks };
    // A half-open instance's single trial is this request; both calls are no-ops on closed circuits.
    this.health.admit(p.id);
    this.health.admit(d.id);
    this.#metrics?.selected(reason);
    return pair;
  }

  /** A request D prefills itself (decode-first): only D's circuit is admitted. */
  #local(d: SchedulerNode, reason: Pair['reason']): Pair {
    this.health.admit(d.id);
    this.#metrics?.selected(reason);
    return localPair(d, this.policy, reason, this.#hits?.tokensOf(d.id) ?? 0);
  }

  #fail(reason: PickFailureReason, request: CheckedRequest): PickFailure {
    this.#metrics?.failed(reason);
    return { ok: false, reason, message: failureMessage(reason, request) };
  }

  #hashesOf(checked: CheckedRequest, original: PickRequest): readonly number[] {
    const cached = this.#hashes.get(original);
    if (cached !== undefined) return cached;
    const hashes = prefixHashes(checked, this.#blockSize);
    this.#hashes.set(original, hashes);
    return hashes;
  }
}

/**
 * Creates the scheduler of a Coordinator.
 * @example const scheduler = createScheduler({ cluster: registry, loads: ledgerLoads(ledger), policy: { prefill: 'cache_affinity' } });
 */
export function createScheduler(options: SchedulerOptions): PdScheduler {
  return new PdScheduler(options);
}

/** Failures an early trial of an open circuit may turn into a pair. */
const TRIAL_REASONS: ReadonlySet<PickFailureReason> = new Set(['no_healthy_prefill', 'no_healthy_decode', 'excluded']);
