/**
 * The scheduler's Prometheus metrics: pair selections by policy and by how P was chosen, failed
 * picks by reason, and each instance's circuit state. The circuit gauge is computed when scraped,
 * over the indexed instances, so a closed circuit shows as 0 without any per-request work.
 */
import { Counter, Gauge, type Registry } from '../metrics.ts';
import { CIRCUIT_STATE_CODE, type CircuitBreakers } from './health.ts';
import { PICK_FAILURES, PICK_REASONS, type PickFailureReason, type PickReason, type PolicyChoice } from './types.ts';

type CounterChild = ReturnType<Counter['labels']>;

export class SchedulerMetrics {
  readonly #selections: Record<PickReason, CounterChild>;
  readonly #failures: Record<PickFailureReason, CounterChild>;

  constructor(registry: Registry, policy: PolicyChoice, source: { ids(): Iterable<number>; health: CircuitBreakers }) {
    const registers = [registry];
    const selections = new Counter({
      name: 'pdlink_pd_pair_selections_total',
      help: 'Prefill/decode pairs chosen, by policy (prefill/decode) and by how the prefill instance was chosen',
      labelNames: ['policy', 'reason'],
      registers,
    });
    const failures = new Counter({
      name: 'pdlink_scheduler_pick_failures_total',
      help: 'Requests for which no prefill/decode pair could be chosen, by reason',
      labelNames: ['reason'],
      registers,
    });
    const policyLabel = `${policy.prefill}/${policy.decode}`;
    // Children resolved once: no label hashing per pick, and every series exists from the start.
    this.#selections = Object.fromEntries(PICK_REASONS.map((r) => [r, selections.labels(policyLabel, r)])) as Record<PickReason, CounterChild>;
    this.#failures = Object.fromEntries(PICK_FAILURES.map((r) => [r, failures.labels(r)])) as Record<PickFailureReason, CounterChild>;
    new Gauge({
      name: 'pdlink_circuit_state',
      help: 'Circuit breaker state of each prefill/decode instance: 0 closed, 1 half-open, 2 open',
      labelNames: ['instance'],
      registers,
      collect() {
        this.reset();
        for (const id of source.ids()) this.set({ instance: String(id) }, CIRCUIT_STATE_CODE[source.health.state(id)]);
      },
    });
  }

  /**
   * Counts a chosen pair.
   * @example metrics.selected('cache_hit');
   */
  selected(reason: PickReason): void {
    this.#selections[reason].inc();
  }

  /**
   * Counts a failed pick.
   * @example metrics.failed('no_capacity');
   */
  failed(reason: PickFailureReason): void {
    this.#failures[reason].inc();
  }
}
