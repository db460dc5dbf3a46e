import { describe, expect, test } from 'bun:test';
import { collectDefaultMetrics } from 'prom-client';
import { modulesLoadedBy } from '../../test/support/modules-loaded.ts';
import { createRegistry } from './metrics.ts';
import { collectProcessMetrics } from './process-metrics.ts';

/** Metric names and types of a registry, in registration order. */
async function shape(registry: ReturnType<typeof createRegistry>): Promise<string[]> {
  return (await registry.getMetricsAsJSON()).map((m) => `${m.name} ${m.type}`);
}

describe('collectProcessMetrics', () => {
  test("registers the metrics prom-client's collectDefaultMetrics does, with the same names, types and order", async () => {
    const ours = createRegistry();
    collectProcessMetrics(ours, 'pdlink_process_');
    const theirs = createRegistry();
    collectDefaultMetrics({ register: theirs, prefix: 'pdlink_process_' });
    expect(await shape(ours)).toEqual(await shape(theirs));
    expect(await shape(ours)).toContain('pdlink_process_process_cpu_seconds_total counter');
  });

  test('the CPU counters advance with the CPU the process spends, user plus system making the total', async () => {
    const registry = createRegistry();
    collectProcessMetrics(registry, 'x_');
    // One scrape: the user counter's collect moves all three, read after it in the same text.
    const read = async () => {
      const text = await registry.metrics();
      const of = (name: string) => Number(new RegExp(`^x_process_${name} (\\S+)$`, 'm').exec(text)?.[1]);
      return { user: of('cpu_user_seconds_total'), system: of('cpu_system_seconds_total'), total: of('cpu_seconds_total') };
    };
    const before = await read();
    const spinUntil = process.cpuUsage().user + 30_000;
    while (process.cpuUsage().user < spinUntil) Math.sqrt(Math.random());
    const after = await read();
    expect(after.user - before.user).toBeGreaterThanOrEqual(0.03);
    expect(after.total).toBeCloseTo(after.user + after.system, 6);
  });

  test('loading them does not load the OpenTelemetry API', async () => {
    const loaded = await modulesLoadedBy(new URL('./process-metrics.ts', import.meta.url).pathname);
    expect(loaded.some((f) => f.endsWith('/prom-client/lib/metrics/gc.js'))).toBe(true);
    expect(loaded.filter((f) => f.includes('/@opentelemetry/') || f.endsWith('/lib/metrics/processCpuTotal.js'))).toEqual([]);
  });
});
