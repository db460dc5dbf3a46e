import { expect, test } from 'bun:test';
import { TestCluster } from '../../test/doubles/cluster.ts';
import { createRegistry, type Registry } from '../core/metrics.ts';
import { ManualClock } from '../core/lease-clock.ts';
import { KvLedger } from './ledger.ts';

function setup() {
  const cluster = new TestCluster();
  cluster.refresh([
    { id: 0, role: 'prefill', availSlots: 8, availBlocks: 100 },
    { id: 1, role: 'decode', availSlots: 8, availBlocks: 100 },
  ]);
  const clock = new ManualClock(0);
  const metrics = createRegistry();
  const ledger = new KvLedger({ cluster, clock, metrics });
  return { cluster, clock, metrics, ledger };
}

/** Value of one sample line, e.g. `pdlink_ledger_reserved_blocks{instance="0"}`. */
async function sample(registry: Registry, series: string): Promise<number | undefined> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('reserved gauges per instance and in-flight by state follow the ledger', async () => {
  const { ledger, metrics } = setup();
  ledger.reserve({ requestId: 'a', p: 0, d: 1, pBlocks: 10, dBlocks: 12 });
  ledger.reserve({ requestId: 'b', p: 0, d: 1, slots: 2, pBlocks: 5, dBlocks: 5 });
  ledger.begin('b', 'transferring');
  // Reserved and begun in one call: counted as prefilling only.
  ledger.reserve({ requestId: 'c', p: 0, d: 1, pBlocks: 1, dBlocks: 1, phase: 'prefilling' });
  expect(await sample(metrics, 'pdlink_ledger_reserved_blocks{instance="0"}')).toBe(16);
  expect(await sample(metrics, 'pdlink_ledger_reserved_blocks{instance="1"}')).toBe(18);
  expect(await sample(metrics, 'pdlink_ledger_reserved_slots{instance="0"}')).toBe(4);
  expect(await sample(metrics, 'pdlink_kv_transfers_in_flight{state="reserved"}')).toBe(1);
  expect(await sample(metrics, 'pdlink_kv_transfers_in_flight{state="prefilling"}')).toBe(1);
  expect(await sample(metrics, 'pdlink_kv_transfers_in_flight{state="transferring"}')).toBe(1);
  ledger.release('a', 'client_abort');
  ledger.fail('b', 'LLM_TIMEOUT');
  ledger.complete('c');
  expect(await sample(metrics, 'pdlink_kv_transfers_in_flight{state="prefilling"}')).toBe(0);
  expect(await sample(metrics, 'pdlink_ledger_reserved_blocks{instance="0"}')).toBe(0);
  expect(await sample(metrics, 'pdlink_kv_transfers_in_flight{state="transferring"}')).toBe(0);
  expect(await sample(metrics, 'pdlink_ledger_records_ended_total{outcome="released"}')).toBe(1);
  expect(await sample(metrics, 'pdlink_ledger_records_ended_total{outcome="failed"}')).toBe(1);
});

test('a completed transfer counts bytes, blocks and its duration', async () => {
  const { ledger, metrics, clock } = setup();
  ledger.reserve({ requestId: 'r', p: 0, d: 1, pBlocks: 16, dBlocks: 16 });
  ledger.begin('r', 'transferring');
  clock.advance(40);
  ledger.complete('r', { bytes: 1 << 20, blocks: 16 });
  expect(await sample(metrics, 'pdlink_kv_bytes_moved_total')).toBe(1 << 20);
  expect(await sample(metrics, 'pdlink_kv_blocks_moved_total')).toBe(16);
  expect(await sample(metrics, 'pdlink_kv_transfer_duration_seconds_count')).toBe(1);
  expect(await sample(metrics, 'pdlink_kv_transfer_duration_seconds_sum')).toBeCloseTo(0.04, 9);
  expect(await sample(metrics, 'pdlink_kv_transfer_duration_seconds_bucket{le="0.025"}')).toBe(0);
  expect(await sample(metrics, 'pdlink_kv_transfer_duration_seconds_bucket{le="0.05"}')).toBe(1);
});

test('expirations are counted; a removed instance drops out of the per-instance gauges', async () => {
  const { ledger, metrics, clock, cluster } = setup();
  ledger.reserve({ requestId: 'r', p: 0, d: 1, pBlocks: 1, dBlocks: 1, leaseMs: 100 });
  expect(await sample(metrics, 'pdlink_ledger_expirations_total')).toBe(0);
  clock.advance(100);
  expect(await sample(metrics, 'pdlink_ledger_expirations_total')).toBe(1);
  cluster.refresh([{ id: 0, role: 'prefill', availSlots: 8, availBlocks: 100 }]);
  expect(await sample(metrics, 'pdlink_ledger_reserved_blocks{instance="0"}')).toBe(0);
  expect(await sample(metrics, 'pdlink_ledger_reserved_blocks{instance="1"}')).toBeUndefined();
});

test('without a registry the ledger keeps no metrics', () => {
  const cluster = new TestCluster();
  cluster.refresh([
    { id: 0, role: 'prefill', availSlots: 1, availBlocks: 1 },
    { id: 1, role: 'decode', availSlots: 1, availBlocks: 1 },
  ]);
  const ledger = new KvLedger({ cluster, clock: new ManualClock() });
  ledger.reserve({ requestId: 'r', p: 0, d: 1, pBlocks: 1, dBlocks: 1 });
  ledger.begin('r', 'transferring');
  expect(ledger.complete('r', { bytes: 5 }).state).toBe('done');
});
