import { describe, expect, test } from 'bun:test';
import { TestCluster } from '../../test/doubles/cluster.ts';
import { createRegistry } from '../core/metrics.ts';
import { createHealth } from './breakers.ts';
import { createScheduler } from './scheduler.ts';

async function series(registry: ReturnType<typeof createRegistry>, name: string): Promise<Record<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  if (metric === undefined) throw new Error(`${name} is not registered`);
  return Object.fromEntries(metric.values.map((v) => [JSON.stringify(v.labels), v.value]));
}

describe('scheduler metrics', () => {
  test('selections by policy and reason, failures by reason, circuit state per instance', async () => {
    const registry = createRegistry();
    const clock = { now: 0 };
    const health = createHealth({ clock: () => clock.now, failureThreshold: 1, cooldownMs: 10 });
    const cluster = new TestCluster([
      { id: 0, role: 'prefill' },
      { id: 1, role: 'prefill' },
      { id: 10, role: 'decode', peers: [0, 1] },
      { id: 20, role: 'undefined' },
    ]);
    const scheduler = createScheduler({ cluster, health, metrics: registry, policy: { prefill: 'round_robin', decode: 'load_balance' } });
    scheduler.pick();
    scheduler.pick();
    scheduler.pick({ excludeP: new Set([0, 1]) });
    health.recordFailure(1);
    health.recordFailure(10);
    clock.now += 10;
    scheduler.pick(); // D10 is half-open: this request is its trial
    scheduler.pick(); // D10's trial is running: no healthy decode

    const selections = await series(registry, 'pdlink_pd_pair_selections_total');
    expect(selections[JSON.stringify({ policy: 'round_robin/load_balance', reason: 'round_robin' })]).toBe(3);
    // Only the reasons the configured prefill policy can produce are exported.
    expect(selections[JSON.stringify({ policy: 'round_robin/load_balance', reason: 'cache_hit' })]).toBeUndefined();
    const failures = await series(registry, 'pdlink_scheduler_pick_failures_total');
    expect(failures[JSON.stringify({ reason: 'excluded' })]).toBe(1);
    expect(failures[JSON.stringify({ reason: 'no_healthy_decode' })]).toBe(1);
    expect(failures[JSON.stringify({ reason: 'no_prefill' })]).toBe(0);
    const circuits = await series(registry, 'pdlink_circuit_state');
    expect(circuits).toEqual({
      [JSON.stringify({ instance: '0' })]: 0,
      [JSON.stringify({ instance: '1' })]: 1,
      [JSON.stringify({ instance: '10' })]: 1,
    });
    health.recordFailure(10);
    cluster.refresh([
      { id: 0, role: 'prefill' },
      { id: 10, role: 'decode', peers: [0] },
    ]);
    // The refresh lists D10 again, so its open circuit gets a trial at once (half-open).
    expect(await series(registry, 'pdlink_circuit_state')).toEqual({
      [JSON.stringify({ instance: '0' })]: 0,
      [JSON.stringify({ instance: '10' })]: 1,
    });
  });

  test('two schedulers keep separate registries', async () => {
    const a = createRegistry();
    const b = createRegistry();
    const cluster = new TestCluster([
      { id: 0, role: 'prefill' },
      { id: 10, role: 'decode', peers: [0] },
    ]);
    createScheduler({ cluster, metrics: a }).pick();
    createScheduler({ cluster, metrics: b });
    expect(
      (await series(a, 'pdlink_pd_pair_selections_total'))[JSON.stringify({ policy: 'load_balance/load_balance', reason: 'least_load' })],
    ).toBe(1);
    expect(
      (await series(b, 'pdlink_pd_pair_selections_total'))[JSON.stringify({ policy: 'load_balance/load_balance', reason: 'least_load' })],
    ).toBe(0);
  });
});
