/**
 * Admission's Prometheus metrics, per class and tenant: requests admitted (and how), refused (and
 * why), cut for a higher class, the wait of every admitted request, what waits now, and the room of
 * each stage. Tenants come from clients (addresses, headers), so their label values are bounded:
 * the tenants of the configuration and the first MAX_TENANT_SERIES others have their own, any
 * later one counts as `other`.
 */
import { FastCounter, FastHistogram, type CounterCell, type HistogramCell } from '../core/fast-metrics.ts';
import { Gauge, METRIC_PREFIX, type Registry } from '../core/metrics.ts';
import type { AdmissionSnapshot, AdmittedHow, RefusalReason } from './types.ts';

/** Tenants not in the configuration that get their own label value; later ones share `other`. */
export const MAX_TENANT_SERIES = 100;
export const OTHER_TENANT = 'other';

const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

interface TenantCells {
  readonly admitted: Record<AdmittedHow, CounterCell>;
  readonly wait: HistogramCell;
}

export class AdmissionMetrics {
  readonly #classes: readonly string[];
  readonly #known: ReadonlySet<string>;
  readonly #labels = new Map<string, string>();
  readonly #cells = new Map<string, TenantCells>();
  readonly #admitted: FastCounter<'class' | 'tenant' | 'how'>;
  readonly #refused: FastCounter<'class' | 'tenant' | 'reason'>;
  readonly #cancelled: FastCounter<'class' | 'tenant'>;
  readonly #wait: FastHistogram<'class' | 'tenant'>;
  #others = 0;

  /**
   * Registers the metrics; `snapshot` is read at scrape time for the gauges.
   * @example new AdmissionMetrics(registry, ['interactive', 'batch'], ['chat'], () => admission.snapshot());
   */
  constructor(registry: Registry, classes: readonly string[], tenants: Iterable<string>, snapshot: () => AdmissionSnapshot) {
    this.#classes = classes;
    this.#known = new Set(tenants);
    const registers = [registry];
    const p = `${METRIC_PREFIX}admission_`;
    this.#admitted = new FastCounter({
      name: `${p}admitted_total`,
      help: 'Requests admitted, by class, tenant and how (immediate: room at arrival; queued: after waiting).',
      labelNames: ['class', 'tenant', 'how'],
      registers,
    });
    this.#refused = new FastCounter({
      name: `${p}shed_total`,
      help: 'Requests refused or cut by admission, by class, tenant and reason (timeout, queue_full, shed, unavailable, preempted).',
      labelNames: ['class', 'tenant', 'reason'],
      registers,
    });
    this.#cancelled = new FastCounter({
      name: `${p}cancelled_total`,
      help: 'Requests whose client left while they waited, by class and tenant.',
      labelNames: ['class', 'tenant'],
      registers,
    });
    this.#wait = new FastHistogram({
      name: `${p}wait_seconds`,
      help: 'Time from arrival to admission of admitted requests (0 for immediate ones), by class and tenant.',
      labelNames: ['class', 'tenant'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    const label = (tenant: string): string => this.#label(tenant);
    new Gauge({
      name: `${p}queued`,
      help: 'Requests waiting now, by class and tenant.',
      labelNames: ['class', 'tenant'],
      registers,
      collect() {
        this.reset();
        for (const c of snapshot().classes) {
          const sums = new Map<string, number>();
          for (const t of c.tenants) sums.set(label(t.tenant), (sums.get(label(t.tenant)) ?? 0) + t.queued);
          for (const [tenant, n] of sums) this.set({ class: c.name, tenant }, n);
        }
      },
    });
    new Gauge({
      name: `${p}queued_bytes`,
      help: 'Request body bytes held by waiting requests.',
      registers,
      collect() {
        this.set(snapshot().queuedBytes);
      },
    });
    new Gauge({
      name: `${p}stage_room`,
      help: 'Requests each stage can still start now (0 = saturated), by stage.',
      labelNames: ['stage'],
      registers,
      collect() {
        const { stages } = snapshot();
        this.set({ stage: 'prefill' }, stages.prefill.room);
        this.set({ stage: 'decode' }, stages.decode.room);
      },
    });
    new Gauge({
      name: `${p}stage_in_flight`,
      help: 'Requests this process holds on each stage: prefills not yet answered by P, requests holding a D.',
      labelNames: ['stage'],
      registers,
      collect() {
        const { stages } = snapshot();
        this.set({ stage: 'prefill' }, stages.prefill.inFlight);
        this.set({ stage: 'decode' }, stages.decode.inFlight);
      },
    });
  }

  /**
   * A request was admitted after waiting `waitSeconds`.
   * @example metrics.admitted(0, 'chat', 'immediate', 0);
   */
  admitted(classIndex: number, tenant: string, how: AdmittedHow, waitSeconds: number): void {
    const cells = this.#tenantCells(classIndex, tenant);
    cells.admitted[how].inc();
    cells.wait.observe(waitSeconds);
  }

  /** A request was refused or cut. */
  refused(classIndex: number, tenant: string, reason: RefusalReason): void {
    this.#refused.labels(this.#classes[classIndex]!, this.#label(tenant), reason).inc();
  }

  /** A waiting request's client left. */
  cancelled(classIndex: number, tenant: string): void {
    this.#cancelled.labels(this.#classes[classIndex]!, this.#label(tenant)).inc();
  }

  #tenantCells(classIndex: number, tenant: string): TenantCells {
    const key = `${classIndex}\u0000${tenant}`;
    let cells = this.#cells.get(key);
    if (cells === undefined) {
      const name = this.#classes[classIndex]!;
      const label = this.#label(tenant);
      cells = {
        admitted: { immediate: this.#admitted.labels(name, label, 'immediate'), queued: this.#admitted.labels(name, label, 'queued') },
        wait: this.#wait.labels(name, label),
      };
      // Bounded as the labels are: past the cap, every new tenant shares the `other` cells.
      if (label !== OTHER_TENANT || this.#cells.size < 4 * MAX_TENANT_SERIES) this.#cells.set(key, cells);
    }
    return cells;
  }

  #label(tenant: string): string {
    if (this.#known.has(tenant)) return tenant;
    const seen = this.#labels.get(tenant);
    if (seen !== undefined) return seen;
    if (this.#others >= MAX_TENANT_SERIES) return OTHER_TENANT;
    this.#others++;
    this.#labels.set(tenant, tenant);
    return tenant;
  }
}
