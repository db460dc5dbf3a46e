/**
 * Counters and histograms for the per-request path, registered on the same prom-client registry
 * and exposed in the same format as prom-client's own. prom-client's children build a label object,
 * validate it and hash it to a string on every observation, even when bound once with `labels()`;
 * with four histogram observations and four counter increments per proxied request, that was a
 * few percent of the proxy's CPU. Here a child is a cell holding its numbers: an increment is an
 * addition, an observation a short scan of the bucket bounds. Everything is read only when the
 * registry is scraped. Metrics that move rarely stay prom-client's.
 *
 * A performance twin of prom-client's Counter and Histogram: fast-metrics.test.ts registers both
 * on one registry, moves them alike, and checks that the scraped text (and get()) is the same.
 */
import type { Registry } from 'prom-client';

/** One series of a counter: its labels and value, moved directly. */
export interface CounterCell {
  inc(by?: number): void;
}

/** One series of a histogram. */
export interface HistogramCell {
  observe(value: number): void;
}

/** A metric value as prom-client's registry reads it from `get()`. */
interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** What prom-client's registry reads of a metric. */
interface MetricData {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: MetricValue[];
  aggregator: 'sum';
}

interface MetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  registers: Registry[];
}

function checkValue(value: number, what: string): void {
  if (!Number.isFinite(value)) throw new TypeError(`${what}: value is not a finite number: ${value}`);
}

class Cells<C> {
  readonly #labelNames: readonly string[];
  readonly #make: (labels: Record<string, string>) => C;
  readonly byKey = new Map<string, { labels: Record<string, string>; cell: C }>();

  constructor(labelNames: readonly string[], make: (labels: Record<string, string>) => C) {
    this.#labelNames = labelNames;
    this.#make = make;
  }

  child(values: readonly string[]): C {
    if (values.length !== this.#labelNames.length) {
      throw new Error(`expected ${this.#labelNames.length} label values (${this.#labelNames.join(', ')}), got ${values.length}`);
    }
    const key = values.join('\u0000');
    let entry = this.byKey.get(key);
    if (entry === undefined) {
      const labels: Record<string, string> = {};
      this.#labelNames.forEach((name, i) => (labels[name] = values[i]!));
      entry = { labels, cell: this.#make(labels) };
      this.byKey.set(key, entry);
    }
    return entry.cell;
  }
}

/**
 * What counters and histograms share: their name and help, their series, and their registration.
 * An unlabelled metric shows its one series from the start, as prom-client's do.
 */
abstract class FastMetric<V extends { seen: boolean }, Cell> {
  readonly name: string;
  readonly help: string;
  /** As prom-client's metrics name them (the reference pages read them there). */
  readonly labelNames: readonly string[];
  readonly aggregator = 'sum';
  protected readonly cells: Cells<V & Cell>;

  constructor(options: MetricOptions<string>, make: () => V & Cell) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames ?? [];
    this.cells = new Cells(options.labelNames ?? [], make);
    if (options.labelNames === undefined || options.labelNames.length === 0) this.cells.child([]).seen = true;
    for (const registry of options.registers) registry.registerMetric(this as never);
  }

  /** The series of these label values (in labelNames order; none when unlabelled), shown once it moves. */
  labels(...values: string[]): Cell {
    return this.cells.child(values);
  }
}

class CounterValue implements CounterCell {
  value = 0;
  /** As in prom-client, a labelled series shows once it has moved (an increment by 0 included). */
  seen = false;
  readonly #name: string;

  constructor(name: string) {
    this.#name = name;
  }

  inc(by = 1): void {
    checkValue(by, this.#name);
    if (by < 0) throw new Error(`${this.#name}: a counter cannot decrease (inc by ${by})`);
    this.value += by;
    this.seen = true;
  }
}

/**
 * A counter whose series are bound once and then moved by a plain addition.
 * @example const requests = new FastCounter({ name: 'pdlink_x_total', help: 'x', labelNames: ['api'], registers: [registry] }); requests.labels('chat').inc();
 */
export class FastCounter<L extends string = string> extends FastMetric<CounterValue, CounterCell> {
  readonly type = 'counter';

  constructor(options: MetricOptions<L>) {
    super(options, () => new CounterValue(options.name));
  }

  /** What the registry shows: one value per series. */
  async get(): Promise<MetricData> {
    const values: MetricValue[] = [];
    for (const { labels, cell } of this.cells.byKey.values()) if (cell.seen) values.push({ value: cell.value, labels });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** As prom-client: labelled series disappear until they move again, an unlabelled one shows 0. */
  reset(): void {
    for (const { labels, cell } of this.cells.byKey.values()) {
      cell.value = 0;
      cell.seen = Object.keys(labels).length === 0;
    }
  }
}

class HistogramValue implements HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  /** As in prom-client, a labelled series shows once it has an observation. */
  seen = false;
  readonly #bounds: readonly number[];
  readonly #name: string;

  constructor(bounds: readonly number[], name: string) {
    this.#bounds = bounds;
    this.#name = name;
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    checkValue(value, this.#name);
    const bounds = this.#bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]!++;
        break;
      }
    }
    this.sum += value;
    this.count++;
    this.seen = true;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
    this.seen = false;
  }
}

/**
 * A histogram whose series are bound once; cumulative buckets are summed only when scraped.
 * @example const decode = new FastHistogram({ name: 'pdlink_x_seconds', help: 'x', buckets: [0.1, 1], registers: [registry] }).labels(); decode.observe(0.2);
 */
export class FastHistogram<L extends string = string> extends FastMetric<HistogramValue, HistogramCell> {
  readonly type = 'histogram';
  readonly #bounds: readonly number[];

  constructor(options: MetricOptions<L> & { buckets: readonly number[] }) {
    const bounds = [...options.buckets].sort((a, b) => a - b);
    super(options, () => new HistogramValue(bounds, options.name));
    this.#bounds = bounds;
  }

  /** What the registry shows: each series' cumulative buckets, `+Inf`, sum and count, as prom-client writes them. */
  async get(): Promise<MetricData> {
    const values: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, cell } of this.cells.byKey.values()) {
      if (!cell.seen) continue;
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += cell.counts[i]!;
        values.push({ value: cumulative, labels: { le, ...labels }, metricName: bucket });
      });
      values.push(
        { value: cell.count, labels: { le: '+Inf', ...labels }, metricName: bucket },
        { value: cell.sum, labels, metricName: `${this.name}_sum` },
        { value: cell.count, labels, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** As prom-client: every series disappears until observed again (an unlabelled one too). */
  reset(): void {
    for (const { cell } of this.cells.byKey.values()) cell.reset();
  }
}
