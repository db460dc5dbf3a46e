import { describe, expect, test } from 'bun:test';
import { modulesLoadedBy } from '../../test/support/modules-loaded.ts';
import { Counter, createRegistry, Gauge, Histogram } from './metrics.ts';

describe('metrics', () => {
  test('counters, gauges and histograms on a registry of their own render in the exposition format', async () => {
    const registry = createRegistry();
    new Counter({ name: 'pdlink_test_total', help: 'c', registers: [registry] }).inc(2);
    new Gauge({ name: 'pdlink_test_gauge', help: 'g', registers: [registry] }).set(7);
    new Histogram({ name: 'pdlink_test_seconds', help: 'h', buckets: [1], registers: [registry] }).observe(0.5);
    const text = await registry.metrics();
    expect(text).toContain('pdlink_test_total 2');
    expect(text).toContain('pdlink_test_gauge 7');
    expect(text).toContain('pdlink_test_seconds_bucket{le="1"} 1');
    expect(createRegistry()).not.toBe(registry);
  });

  test("loading them does not load prom-client's index, its Pushgateway or its cluster aggregator", async () => {
    const loaded = await modulesLoadedBy(new URL('./metrics.ts', import.meta.url).pathname);
    expect(loaded.some((f) => f.endsWith('/prom-client/lib/registry.js'))).toBe(true);
    expect(loaded.filter((f) => /prom-client\/(index|lib\/pushgateway|lib\/cluster)\.js$/.test(f))).toEqual([]);
  });
});
