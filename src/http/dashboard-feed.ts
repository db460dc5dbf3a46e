/**
 * Turns a dashboard source into the stream of states the page shows. Every open page shares one
 * feed: a change heard from the source schedules one rebuild within `coalesceMs` however many
 * events arrive, a state equal to the last one is not sent again, and one sampler per feed turns
 * the source's counters into per-second rates. Pages never poll. A big cluster makes a rebuild
 * costly (tens of ms at 4096 instances), so rebuilds are spaced to keep their cost near a fixed
 * share of one core, whatever the rate of changes.
 */
import type { DashboardSeries, DashboardSource, DashboardState } from './dashboard-state.ts';

export interface DashboardFeedOptions {
  /** Changes heard within this window share one update (default 100 ms). */
  readonly coalesceMs?: number;
  /** Rate sampling period (default 1000 ms). */
  readonly sampleMs?: number;
  /** Samples kept (default 300: five minutes at one a second). */
  readonly historyPoints?: number;
  /** Wall clock of `at` and of the samples (default Date.now). */
  readonly now?: () => number;
  /** Monotonic clock that times and spaces rebuilds (default performance.now). */
  readonly clock?: () => number;
}

type Send = (state: DashboardState, json: string) => void;

/** Rebuilds take at most about 1/SPACING of a core: one costing 10 ms waits 200 ms before the next. */
const SPACING = 20;

export class DashboardFeed {
  readonly #source: DashboardSource;
  readonly #coalesceMs: number;
  readonly #historyPoints: number;
  readonly #now: () => number;
  readonly #clock: () => number;
  readonly #subscribers = new Set<Send>();
  readonly #times: number[] = [];
  readonly #values = new Map<string, { unit: string; values: number[] }>();
  #lastTotals: Map<string, number> | undefined;
  #lastSampleAt = 0;
  #lastJson = '';
  /** When the last rebuild ended, and how long to wait after it (`clock` ms). */
  #lastFlushAt = -Infinity;
  #gapMs = 0;
  #unwatch: (() => void) | undefined;
  #pending: ReturnType<typeof setTimeout> | undefined;
  #sampler: ReturnType<typeof setInterval> | undefined;

  /** @example const feed = new DashboardFeed(source); const off = feed.subscribe((state) => send(state)); */
  constructor(source: DashboardSource, options: DashboardFeedOptions = {}) {
    this.#source = source;
    this.#coalesceMs = options.coalesceMs ?? 100;
    this.#historyPoints = options.historyPoints ?? 300;
    this.#now = options.now ?? Date.now;
    this.#clock = options.clock ?? (() => performance.now());
    this.sample();
    this.#sampler = setInterval(() => {
      this.sample();
      this.#changed();
    }, options.sampleMs ?? 1000);
    // The sampler is bookkeeping: it must never keep a process alive.
    this.#sampler.unref?.();
  }

  /** The state as of now. */
  state(): DashboardState {
    const topology = this.#source.topology();
    const series: DashboardSeries[] = [...this.#values].map(([name, s]) => ({ name, unit: s.unit, values: [...s.values] }));
    return {
      source: this.#source.kind,
      at: this.#now(),
      instances: topology.instances,
      links: topology.links,
      times: [...this.#times],
      series,
      failures: this.#source.failures(),
      notices: this.#source.notices?.() ?? [],
      admission: this.#source.admission?.() ?? null,
      kvEvents: this.#source.kvEvents?.() ?? null,
    };
  }

  /**
   * Sends the current state at once, then every change; returns the unsubscribe. The source is
   * watched only while someone listens.
   * @example const off = feed.subscribe((_, json) => stream.writeSSE({ data: json }));
   */
  subscribe(send: Send): () => void {
    this.#subscribers.add(send);
    this.#unwatch ??= this.#source.watch(() => this.#changed());
    const state = this.state();
    send(state, JSON.stringify(state));
    return () => {
      this.#subscribers.delete(send);
      if (this.#subscribers.size === 0) {
        this.#unwatch?.();
        this.#unwatch = undefined;
      }
    };
  }

  /** Takes one rate sample from the counters (the sampler calls this; tests call it directly). */
  sample(): void {
    const now = this.#now();
    const totals = this.#source.counters();
    const previous = this.#lastTotals;
    const seconds = (now - this.#lastSampleAt) / 1000;
    this.#lastTotals = new Map(Object.entries(totals).map(([name, c]) => [name, c.total]));
    this.#lastSampleAt = now;
    if (previous === undefined || seconds <= 0) return;
    this.#times.push(now);
    for (const [name, counter] of Object.entries(totals)) {
      let series = this.#values.get(name);
      if (series === undefined) {
        // A series that appears late starts with zeros so every series lines up with `times`.
        series = { unit: counter.unit, values: new Array<number>(this.#times.length - 1).fill(0) };
        this.#values.set(name, series);
      }
      // A counter that went down was reset (a restarted source): count from zero.
      const delta = counter.total - (previous.get(name) ?? 0);
      series.values.push((delta >= 0 ? delta : counter.total) / seconds);
    }
    if (this.#times.length > this.#historyPoints) {
      this.#times.shift();
      for (const s of this.#values.values()) s.values.shift();
    }
  }

  /** Stops the sampler and any pending update; idempotent. */
  close(): void {
    clearInterval(this.#sampler);
    clearTimeout(this.#pending);
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#subscribers.clear();
  }

  #changed(): void {
    if (this.#subscribers.size === 0) return;
    const wait = Math.max(this.#coalesceMs, this.#lastFlushAt + this.#gapMs - this.#clock());
    this.#pending ??= setTimeout(() => {
      this.#pending = undefined;
      this.#flush();
    }, wait);
  }

  #flush(): void {
    if (this.#subscribers.size === 0) return;
    const started = this.#clock();
    const state = this.state();
    const text = JSON.stringify(state);
    // `at` always changes; equal otherwise means nothing to show.
    const json = text.slice(text.indexOf(',"instances":'));
    const ended = this.#clock();
    this.#lastFlushAt = ended;
    this.#gapMs = (ended - started) * SPACING;
    if (json === this.#lastJson) return;
    this.#lastJson = json;
    for (const send of this.#subscribers) send(state, text);
  }
}
