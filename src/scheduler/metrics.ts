/**
 * The scheduler's Prometheus metrics: pair selections by policy and by how P was chosen, failed
 * picks by reason, and each instance's circuit state. The circuit gauge is computed when scraped,
 * over the indexed instances, so a closed circuit shows as 0 without any per-request work.
 */
import { FastCounter, type CounterCell } from '../core/fast-metrics.ts';
import { Gauge, type Registry } from '../core/metrics.ts';
import { PD_PATHS, type PdPath } from './pd-path.ts';
import { CIRCUIT_STATE_CODE, type CircuitBreakers } from './breakers.ts';
import { PICK_FAILURES, type PickFailureReason, type PickReason, type PolicyChoice } from './types.ts';

type CounterChild = CounterCell;

export class SchedulerMetrics {
  readonly #selections = new Map<PickReason, CounterChild>();
  readonly #selectionsOf: (reason: PickReason) => CounterChild;
  readonly #failures: Record<PickFailureReason, CounterChild>;
  readonly #paths: Record<PdPath, CounterChild>;

  /**
   * `reasons`: how the prefill policy says it chose P (its definition's), shown from the start at 0.
   * @example new SchedulerMetrics(registry, { prefill: 'round_robin', decode: 'load_balance' }, ['round_robin'], source);
   */
  constructor(
    registry: Registry,
    policy: PolicyChoice,
    reasons: readonly PickReason[],
    source: { ids(): Iterable<number>; breakers: CircuitBreakers },
  ) {
    const registers = [registry];
    const selections = new FastCounter({
      name: 'pdlink_pd_pair_selections_total',
      help: 'Prefill/decode pairs chosen, by policy (prefill/decode) and by how the prefill instance was chosen',
      labelNames: ['policy', 'reason'],
      registers,
    });
    const failures = new FastCounter({
      name: 'pdlink_scheduler_pick_failures_total',
      help: 'Requests for which no prefill/decode pair could be chosen, by reason',
      labelNames: ['reason'],
      registers,
    });
    const policyLabel = `${policy.prefill}/${policy.decode}`;
    // Children resolved once per reason, so a pick does no label hashing; the series the prefill
    // policy says it can produce, and every failure reason, are shown from the start at 0.
    this.#selectionsOf = (reason) => {
      let child = this.#selections.get(reason);
      if (child === undefined) this.#selections.set(reason, (child = selections.labels(policyLabel, reason)));
      return child;
    };
    for (const reason of reasons) this.#selectionsOf(reason).inc(0);
    this.#failures = Object.fromEntries(PICK_FAILURES.map((r) => [r, failures.labels(r)])) as Record<PickFailureReason, CounterChild>;
    for (const reason of PICK_FAILURES) this.#failures[reason].inc(0);
    const paths = new FastCounter({
      name: 'pdlink_pd_path_total',
      help: 'Requests placed, by path: disaggregated (P then D) or local (D prefills, conditional disaggregation)',
      labelNames: ['path'],
      registers,
    });
    this.#paths = Object.fromEntries(PD_PATHS.map((p) => [p, paths.labels(p)])) as Record<PdPath, CounterChild>;
    for (const path of PD_PATHS) this.#paths[path].inc(0);
    new Gauge({
      name: 'pdlink_circuit_state',
      help: 'Circuit breaker state of each prefill/decode instance: 0 closed, 1 half-open, 2 open',
      labelNames: ['instance'],
      registers,
      collect() {
        this.reset();
        for (const id of source.ids()) this.set({ instance: String(id) }, CIRCUIT_STATE_CODE[source.breakers.state(id)]);
      },
    });
  }

  /**
   * Counts a chosen pair.
   * @example metrics.selected('cache_hit');
   */
  selected(reason: PickReason): void {
    (this.#selections.get(reason) ?? this.#selectionsOf(reason)).inc();
  }

  /**
   * Counts a request that took `path` (once its capacity was reserved).
   * @example metrics.path('local');
   */
  path(path: PdPath): void {
    this.#paths[path].inc();
  }

  /**
   * Counts a failed pick.
   * @example metrics.failed('no_capacity');
   */
  failed(reason: PickFailureReason): void {
    this.#failures[reason].inc();
  }
}
