import { describe, expect, test } from 'bun:test';
import { TestCluster } from '../../test/doubles/cluster.ts';
import { ManualClock } from '../core/lease-clock.ts';
import { KvLedger } from './ledger.ts';
import { ledgerFixture, PAIR, thrownBy } from '../../test/doubles/ledger.ts';

describe('events, snapshot, recent, close', () => {
  test('listeners see every change; a throwing listener is logged and does not break the ledger', () => {
    const { ledger } = ledgerFixture();
    const seen: string[] = [];
    const logged: unknown[] = [];
    const originalError = console.error;
    console.error = (...args: unknown[]) => logged.push(args);
    try {
      ledger.onRecord(() => {
        throw new Error('listener bug');
      });
      const off = ledger.onRecord(({ record, from }) => seen.push(`${from}→${record.state}`));
      ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
      ledger.begin('r', 'prefilling');
      ledger.fail('r', 'upstream_failed');
      off();
      ledger.reserve({ requestId: 's', ...PAIR, pBlocks: 1, dBlocks: 1 });
    } finally {
      console.error = originalError;
    }
    expect(seen).toEqual(['null→reserved', 'reserved→prefilling', 'prefilling→failed']);
    expect(logged).toHaveLength(4);
    expect(ledger.totals()).toMatchObject({ active: 1, failed: 1, reservedBlocks: 2 });
  });

  test('a listener that reserves while an instance is being removed cannot reserve on it', () => {
    const { ledger, cluster } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
    const errors: string[] = [];
    ledger.onRecord(({ record }) => {
      if (record.state !== 'failed') return;
      try {
        ledger.reserve({ requestId: 'retry', ...PAIR, pBlocks: 1, dBlocks: 1 });
      } catch (err) {
        errors.push((err as Error).message);
      }
    });
    cluster.refresh([{ id: 1, role: 'decode', availSlots: 4, availBlocks: 100 }]);
    expect(errors).toEqual(['instance 0 is not registered']);
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
  });

  test('snapshot is plain data that does not alias the ledger', () => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'a', ...PAIR, pBlocks: 2, dBlocks: 3 });
    ledger.reserve({ requestId: 'b', ...PAIR, pBlocks: 1, dBlocks: 1 });
    ledger.begin('b', 'transferring');
    ledger.complete('b', { bytes: 10 });
    const snapshot = ledger.snapshot();
    expect(snapshot.active.map((r) => r.requestId)).toEqual(['a']);
    expect(snapshot.recent.map((r) => r.requestId)).toEqual(['b']);
    expect(snapshot.instances.map((i) => [i.id, i.reservedBlocks])).toEqual([
      [0, 2],
      [1, 3],
    ]);
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual(snapshot);
    (snapshot.active[0] as { state: string }).state = 'done';
    expect(ledger.get('a')?.state).toBe('reserved');
  });

  test('recent keeps the newest records up to its capacity', () => {
    const { ledger } = ledgerFixture({ recentCapacity: 2 });
    for (const id of ['a', 'b', 'c']) {
      ledger.reserve({ requestId: id, ...PAIR, pBlocks: 1, dBlocks: 1 });
      ledger.release(id, 'cancelled');
    }
    expect(ledger.snapshot().recent.map((r) => r.requestId)).toEqual(['c', 'b']);
    expect(ledger.get('a')).toBeUndefined();
    expect(thrownBy(() => ledger.release('a', 'cancelled')).code).toBe('not_found');
    expect(ledger.totals().released).toBe(3);
  });

  test('close releases everything, unsubscribes, disarms, and refuses new work; twice is fine', () => {
    const { ledger, cluster, clock } = ledgerFixture();
    ledger.reserve({ requestId: 'a', ...PAIR, pBlocks: 2, dBlocks: 3 });
    ledger.reserve({ requestId: 'b', ...PAIR, pBlocks: 1, dBlocks: 1 });
    ledger.close();
    ledger.close();
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0, released: 2 });
    expect(ledger.get('a')).toMatchObject({ state: 'released', code: 'shutdown' });
    expect(cluster.listenerCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(thrownBy(() => ledger.reserve({ requestId: 'c', ...PAIR, pBlocks: 1, dBlocks: 1 })).code).toBe('unavailable');
  });

  test('bad options are refused by name', () => {
    const cluster = new TestCluster();
    expect(thrownBy(() => new KvLedger({ cluster, defaultLeaseMs: 0 })).issues[0]?.path).toBe('defaultLeaseMs');
    expect(thrownBy(() => new KvLedger({ cluster, recentCapacity: -1 })).issues[0]?.path).toBe('recentCapacity');
  });

  test('instances known before the ledger was created are reservable', () => {
    const cluster = new TestCluster();
    cluster.refresh([
      { id: 3, role: 'prefill', availSlots: 1, availBlocks: 1 },
      { id: 4, role: 'decode', availSlots: 1, availBlocks: 1 },
    ]);
    const ledger = new KvLedger({ cluster, clock: new ManualClock() });
    expect(ledger.reserve({ requestId: 'r', p: 3, d: 4, pBlocks: 1, dBlocks: 1 }).state).toBe('reserved');
    ledger.close();
  });
});
