import { describe, expect, test } from 'bun:test';
import { exampleSnapshot } from '../../test/doubles/refresh-examples.ts';
import { ClusterRegistry } from '../cluster/registry.ts';
import { KvLedger } from '../ledger/index.ts';
import { createHealth } from '../scheduler/index.ts';
import { parseRefresh } from '../schema/refresh.ts';
import { createAdmission, resolveAdmissionSettings } from '../admission/index.ts';
import { chargedTo, coordinatorSource } from './dashboard-coordinator.ts';

/** P 0, 1 and D 2, 3 in group 0, every P listing every D and back. */
function fixture() {
  const registry = new ClusterRegistry();
  registry.apply(parseRefresh(exampleSnapshot(4)));
  const ledger = new KvLedger({ cluster: registry });
  const health = createHealth();
  const source = coordinatorSource({ registry, ledger, health });
  return { registry, ledger, health, source };
}

describe('chargedTo', () => {
  test('the failed leg, no instance for the client or the ledger, both when the record does not say', () => {
    expect(chargedTo('decode_failed', 0, 2)).toEqual([2]);
    expect(chargedTo('decode_rejected', 0, 2)).toEqual([2]);
    expect(chargedTo('prefill_failed', 0, 2)).toEqual([0]);
    expect(chargedTo('invalid_request', 0, 2)).toEqual([]);
    expect(chargedTo('reserve_failed', 0, 2)).toEqual([]);
    expect(chargedTo('preempted', 0, 2)).toEqual([]);
    expect(chargedTo('lease_expired', 0, 2)).toEqual([0, 2]);
    expect(chargedTo(null, 0, 2)).toEqual([0, 2]);
  });
});

describe('coordinatorSource', () => {
  test('instances and links as the registry holds them, load from the ledger, circuits from the breakers', () => {
    const { ledger, health, source } = fixture();
    ledger.reserve({ requestId: 'r1', p: 0, d: 2, pBlocks: 10, dBlocks: 12 });
    for (let i = 0; i < 5; i++) health.recordFailure(3);
    const { instances, links } = source.topology();
    expect(instances.map((i) => [i.id, i.role, i.group])).toEqual([
      [0, 'prefill', 0],
      [1, 'prefill', 0],
      [2, 'decode', 0],
      [3, 'decode', 0],
    ]);
    expect(instances[0]).toMatchObject({
      address: '10.0.0.0:1025',
      slots: { free: 199, total: 200 },
      blocks: { free: 1014, total: 1024 },
      inFlight: 1,
    });
    expect(instances[2]).toMatchObject({ inFlight: 1, blocks: { free: 1012, total: 1024 }, circuit: 'closed' });
    expect(instances[3]!.circuit).toBe('open');
    expect(links).toEqual([
      { p: 0, d: 2, state: 'ok', code: null },
      { p: 1, d: 2, state: 'ok', code: null },
      { p: 0, d: 3, state: 'ok', code: null },
      { p: 1, d: 3, state: 'ok', code: null },
    ]);
    source.close();
  });

  test('a pair listed by one side only is linking, by neither failed', () => {
    const { registry, source } = fixture();
    // Fresh bodies: the registry keeps the objects it accepted.
    const withPeers = (d3: number[]) => {
      const body = exampleSnapshot(4);
      body.instances[3]!['dynamic_info'].peers = d3;
      body.instances[1]!['dynamic_info'].peers = [2];
      return parseRefresh(body);
    };
    registry.apply(withPeers([0]));
    const states = Object.fromEntries(source.topology().links.map((l) => [`${l.p}-${l.d}`, [l.state, l.code]]));
    expect(states).toEqual({
      '0-2': ['ok', null],
      '1-2': ['ok', null],
      '0-3': ['ok', null],
      '1-3': ['failed', 'not linked'],
    });
    registry.apply(withPeers([0, 1]));
    expect(source.topology().links.find((l) => l.p === 1 && l.d === 3)!.state).toBe('linking');
    source.close();
  });

  test('failed requests are listed newest first with their reason and become the last error of the leg that failed', () => {
    const { ledger, source } = fixture();
    ledger.reserve({ requestId: 'k1', clientRequestId: 'client-1', p: 0, d: 2, pBlocks: 1, dBlocks: 1 });
    ledger.fail('k1', 'decode_failed', 'D answered 500');
    ledger.reserve({ requestId: 'k2', p: 1, d: 3, pBlocks: 1, dBlocks: 1 });
    ledger.fail('k2', 'prefill_failed');
    ledger.reserve({ requestId: 'k3', p: 1, d: 3, pBlocks: 1, dBlocks: 1 });
    expect(source.failures().map((f) => [f.subject, f.instances, f.reason])).toEqual([
      ['k2', [1, 3], 'prefill_failed'],
      ['client-1', [0, 2], 'decode_failed: D answered 500'],
    ]);
    const byId = new Map(source.topology().instances.map((i) => [i.id, i]));
    expect(byId.get(0)!.lastError).toBeNull();
    expect(byId.get(2)!.lastError?.message).toBe('decode_failed: D answered 500');
    expect(byId.get(1)!.lastError?.message).toBe('prefill_failed');
    expect(byId.get(3)!.lastError).toBeNull();
    expect(source.counters()).toEqual({
      requests: { unit: 'req/s', total: 3 },
      failures: { unit: 'req/s', total: 2 },
      kv_bytes: { unit: 'B/s', total: 0 },
    });
    source.close();
  });

  test('a refresh, a ledger record and a circuit change are heard while watched, not after', () => {
    const { registry, ledger, health, source } = fixture();
    let heard = 0;
    const off = source.watch(() => heard++);
    registry.apply(parseRefresh(exampleSnapshot(4, { load: 1 })));
    const afterRefresh = heard;
    expect(afterRefresh).toBeGreaterThan(0);
    ledger.reserve({ requestId: 'w', p: 0, d: 2, pBlocks: 1, dBlocks: 1 });
    expect(heard).toBeGreaterThan(afterRefresh);
    const afterRecord = heard;
    for (let i = 0; i < 5; i++) health.recordFailure(2);
    expect(heard).toBeGreaterThan(afterRecord);
    off();
    const stopped = heard;
    registry.apply(parseRefresh(exampleSnapshot(4, { load: 2 })));
    ledger.release('w', 'cancelled');
    expect(heard).toBe(stopped);
    source.close();
  });

  test('admission: the queue by class with its waiting tenants, and each stage’s room; null without admission', () => {
    const { registry, ledger, health, source } = fixture();
    expect(source.admission?.()).toBeNull();
    const admission = createAdmission({
      settings: resolveAdmissionSettings({ decode: { max_in_flight_per_instance: 1 } }),
      cluster: registry,
      ledger,
      maxPerInstance: 1000,
      maxInFlight: 100,
    });
    const withQueue = coordinatorSource({ registry, ledger, health, admission });
    ledger.reserve({ requestId: 'a', p: 0, d: 2, pBlocks: 1, dBlocks: 1, phase: 'prefilling' });
    ledger.reserve({ requestId: 'b', p: 1, d: 3, pBlocks: 1, dBlocks: 1, phase: 'prefilling' });
    const handlers = { start() {}, refuse() {} };
    for (const tenant of ['x', 'y', 'y'])
      admission.enter({ tenant, classIndex: 1, weight: 1, needsPrefill: true, bodyBytes: 10 }, handlers);
    expect(withQueue.admission?.()).toEqual({
      inFlight: 0,
      queued: 3,
      queuedBytes: 30,
      classes: [
        { name: 'interactive', queued: 0, running: 0, queueTimeoutMs: 10_000, tenants: [] },
        {
          name: 'batch',
          queued: 3,
          running: 0,
          queueTimeoutMs: 60_000,
          tenants: [
            { tenant: 'y', queued: 2 },
            { tenant: 'x', queued: 1 },
          ],
        },
      ],
      stages: { prefill: { instances: 2, room: 398, inFlight: 2 }, decode: { instances: 2, room: 0, inFlight: 2 } },
    });
    admission.close();
    ledger.release('a', 'client_abort');
    ledger.release('b', 'client_abort');
    expect(ledger.totals().reservedSlots).toBe(0);
    withQueue.close();
    source.close();
  });
});

describe('coordinatorSource: KV events', () => {
  test('each stream with its counters, the index size and the entries not followed; none without publishers', async () => {
    const { KvEventIntake } = await import('../kv-events/intake.ts');
    const { registry, ledger, health } = fixture();
    const intake = new KvEventIntake();
    try {
      const problems = new Map<number, string>();
      const source = coordinatorSource({ registry, ledger, health, kv: { intake, problems } });
      expect(source.kvEvents!()).toBeNull();
      intake.add({
        instance: '0',
        dpRank: 1,
        tenant: 'default',
        model: 'm',
        blockSize: 16,
        lora: '',
        salt: '',
        endpoint: 'tcp://127.0.0.1:9',
        origin: 'topology',
      });
      problems.set(1, 'kv_events_endpoint: must be tcp://HOST:PORT, got "udp://x"');
      const kv = source.kvEvents!()!;
      expect(kv.streams).toEqual([
        {
          instance: '0',
          dpRank: 1,
          endpoint: 'tcp://127.0.0.1:9',
          connected: false,
          lastSeq: null,
          applied: 0,
          replayed: 0,
          skipped: 0,
          gaps: 0,
          resets: { restart: 0, gap_unfilled: 0, cleared: 0 },
          orphans: 0,
          lastError: null,
        },
      ]);
      expect(kv.problems).toEqual([{ instance: 1, reason: 'kv_events_endpoint: must be tcp://HOST:PORT, got "udp://x"' }]);
      expect(kv.heldBlocks).toBe(0);
    } finally {
      intake.close();
    }
  });
});
