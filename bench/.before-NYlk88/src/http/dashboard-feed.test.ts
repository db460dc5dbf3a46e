import { describe, expect, jest, test } from 'bun:test';
import { DashboardFeed } from './dashboard-feed.ts';
import type { DashboardSource, DashboardState, DashboardTopology } from './dashboard-state.ts';

/** A source whose topology, counters and change events the test drives. */
class FakeSource implements DashboardSource {
  readonly kind = 'coordinator' as const;
  topologyNow: DashboardTopology = { instances: [], links: [] };
  totals: Record<string, number> = { requests: 0 };
  listeners = new Set<() => void>();
  topology = () => this.topologyNow;
  counters = () => Object.fromEntries(Object.entries(this.totals).map(([k, total]) => [k, { unit: 'req/s', total }]));
  failures = () => [];
  watch(changed: () => void): () => void {
    this.listeners.add(changed);
    return () => this.listeners.delete(changed);
  }
  change(): void {
    for (const l of this.listeners) l();
  }
}

const link = (state: 'ok' | 'failed') => ({ p: 0, d: 1, state, code: state === 'ok' ? null : 'LLM_LINK_FAILED' });

/** A feed on a clock the test moves; its own sampler never fires within a test. */
function feedOf(source: FakeSource, options: { historyPoints?: number } = {}) {
  const clock = { t: 1_000_000 };
  const feed = new DashboardFeed(source, { sampleMs: 3_600_000, coalesceMs: 5, now: () => clock.t, ...options });
  return { feed, clock };
}

describe('DashboardFeed', () => {
  test('turns cumulative counters into per-second rates; a counter that went down counts from zero', () => {
    const source = new FakeSource();
    const { feed, clock } = feedOf(source);
    clock.t += 2000;
    source.totals = { requests: 10 };
    feed.sample();
    clock.t += 1000;
    source.totals = { requests: 4 };
    feed.sample();
    const state = feed.state();
    expect(state.times).toEqual([1_002_000, 1_003_000]);
    expect(state.series).toEqual([{ name: 'requests', unit: 'req/s', values: [5, 4] }]);
    feed.close();
  });

  test('keeps only the last historyPoints samples; a series that appears late is padded with zeros', () => {
    const source = new FakeSource();
    const { feed, clock } = feedOf(source, { historyPoints: 3 });
    for (let i = 1; i <= 5; i++) {
      clock.t += 1000;
      source.totals = i === 4 ? { requests: i, kv_bytes: 100 } : { requests: i, kv_bytes: i > 4 ? 300 : 0 };
      feed.sample();
    }
    const state = feed.state();
    expect(state.times.length).toBe(3);
    expect(state.series.find((s) => s.name === 'requests')!.values).toEqual([1, 1, 1]);
    expect(state.series.find((s) => s.name === 'kv_bytes')!.values).toEqual([0, 100, 200]);
    feed.close();
  });

  test('a subscriber gets the state at once; a burst of changes becomes one update', () => {
    jest.useFakeTimers();
    try {
      const source = new FakeSource();
      const { feed } = feedOf(source);
      const received: DashboardState[] = [];
      const off = feed.subscribe((state) => received.push(state));
      expect(received.length).toBe(1);
      source.topologyNow = { instances: [], links: [link('ok')] };
      for (let i = 0; i < 100; i++) source.change();
      jest.advanceTimersByTime(4);
      expect(received.length).toBe(1);
      jest.advanceTimersByTime(1);
      expect(received.length).toBe(2);
      expect(received[1]!.links).toEqual([link('ok')]);
      jest.advanceTimersByTime(1000);
      expect(received.length).toBe(2);
      off();
      feed.close();
    } finally {
      jest.useRealTimers();
    }
  });

  test('a change that changes nothing is not sent; the next real one is', () => {
    jest.useFakeTimers();
    try {
      const source = new FakeSource();
      const { feed } = feedOf(source);
      const received: DashboardState[] = [];
      feed.subscribe((state) => received.push(state));
      source.topologyNow = { instances: [], links: [link('ok')] };
      source.change();
      jest.advanceTimersByTime(5);
      source.change();
      jest.advanceTimersByTime(5);
      expect(received.map((s) => s.links[0]?.state)).toEqual([undefined, 'ok']);
      source.topologyNow = { instances: [], links: [link('failed')] };
      source.change();
      jest.advanceTimersByTime(5);
      expect(received.map((s) => s.links[0]?.state)).toEqual([undefined, 'ok', 'failed']);
      feed.close();
    } finally {
      jest.useRealTimers();
    }
  });

  test('a costly rebuild spaces the next one: at 10 ms each, updates come at most every 200 ms', () => {
    jest.useFakeTimers();
    try {
      const source = new FakeSource();
      const cost = { t: 0 };
      const topology = source.topology;
      // Every rebuild reads the topology, which here takes 10 ms of the feed's clock.
      source.topology = () => ((cost.t += 10), topology());
      const feed = new DashboardFeed(source, { sampleMs: 3_600_000, coalesceMs: 5, clock: () => cost.t });
      const received: DashboardState[] = [];
      feed.subscribe((state) => received.push(state));
      source.topologyNow = { instances: [], links: [link('ok')] };
      source.change();
      jest.advanceTimersByTime(5);
      expect(received.length).toBe(2);
      source.topologyNow = { instances: [], links: [link('failed')] };
      source.change();
      jest.advanceTimersByTime(199);
      expect(received.length).toBe(2);
      jest.advanceTimersByTime(1);
      expect(received.length).toBe(3);
      expect(received[2]!.links).toEqual([link('failed')]);
      feed.close();
    } finally {
      jest.useRealTimers();
    }
  });

  test('watches the source only while someone listens', () => {
    const source = new FakeSource();
    const { feed } = feedOf(source);
    expect(source.listeners.size).toBe(0);
    const a = feed.subscribe(() => {});
    const b = feed.subscribe(() => {});
    expect(source.listeners.size).toBe(1);
    a();
    expect(source.listeners.size).toBe(1);
    b();
    expect(source.listeners.size).toBe(0);
    feed.close();
  });
});
