import { describe, expect, test } from 'bun:test';
import { TestCluster } from '../../test/doubles/cluster.ts';
import type { LeaseClock } from '../core/lease-clock.ts';
import { KvLedger } from './ledger.ts';
import { ledgerFixture, PAIR } from '../../test/doubles/ledger.ts';
import type { LedgerEvent } from './types.ts';

describe('leases', () => {
  test('a record nobody completes expires at its deadline, not before', () => {
    const { ledger, clock } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 9, dBlocks: 9, leaseMs: 1_000 });
    clock.advance(999);
    expect(ledger.isActive('r')).toBe(true);
    clock.advance(1);
    const record = ledger.get('r');
    expect(record).toMatchObject({ state: 'expired', code: 'lease_expired', endedAt: 1_001_000 });
    expect(ledger.totals()).toMatchObject({ active: 0, reservedBlocks: 0, reservedSlots: 0, expired: 1 });
    expect(clock.pendingTimers).toBe(0);
  });

  test('the timer expires records with no call into the ledger (event observed)', () => {
    const { ledger, clock } = ledgerFixture({ defaultLeaseMs: 500 });
    const events: LedgerEvent[] = [];
    ledger.onRecord((e) => events.push(e));
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
    clock.advance(10_000);
    expect(events.map((e) => [e.from, e.record.state])).toEqual([
      [null, 'reserved'],
      ['reserved', 'expired'],
    ]);
    expect(events[1]?.record.endedAt).toBe(1_000_500);
  });

  test('expiry is exact even when the timer has not fired yet', () => {
    let now = 0;
    const lazyClock: LeaseClock = { now: () => now, setTimer: () => 'never', clearTimer: () => {} };
    const cluster = new TestCluster();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 1, availBlocks: 10 },
      { id: 1, role: 'decode', availSlots: 1, availBlocks: 10 },
    ]);
    const ledger = new KvLedger({ cluster, clock: lazyClock });
    ledger.reserve({ requestId: 'old', ...PAIR, pBlocks: 10, dBlocks: 10, leaseMs: 100 });
    now = 100;
    // The only slot is held by an expired lease: the new reservation must see it free.
    expect(ledger.reserve({ requestId: 'new', ...PAIR, pBlocks: 10, dBlocks: 10 }).state).toBe('reserved');
    expect(ledger.get('old')?.state).toBe('expired');
  });

  test('begin renews the lease; extend sets it to end ms from now', () => {
    const { ledger, clock } = ledgerFixture({ defaultLeaseMs: 1_000 });
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
    clock.advance(900);
    ledger.begin('r', 'prefilling');
    clock.advance(900);
    expect(ledger.isActive('r')).toBe(true);
    expect(ledger.extend('r', 5_000).deadline).toBe(clock.now() + 5_000);
    clock.advance(4_999);
    expect(ledger.isActive('r')).toBe(true);
    expect(ledger.extend('r').deadline).toBe(clock.now() + 1_000);
    expect(ledger.extend('r', 10).deadline).toBe(clock.now() + 10);
    clock.advance(10);
    expect(ledger.get('r')?.state).toBe('expired');
  });

  test('one timer covers every lease, armed no later than the earliest deadline', () => {
    const { ledger, clock } = ledgerFixture();
    for (let i = 0; i < 4; i++) ledger.reserve({ requestId: `r${i}`, ...PAIR, pBlocks: 1, dBlocks: 1, leaseMs: 1_000 * (4 - i) });
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerDue).toBe(clock.now() + 1_000);
    clock.advance(1_000);
    expect(ledger.get('r3')?.state).toBe('expired');
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerDue).toBe(clock.now() + 1_000);
    // Ending the earliest record leaves the timer where it is; when it fires it re-arms for the next deadline.
    ledger.release('r2', 'cancelled');
    expect(clock.nextTimerDue).toBe(clock.now() + 1_000);
    clock.advance(1_000);
    expect(clock.nextTimerDue).toBe(clock.now() + 1_000);
    expect(ledger.isActive('r1')).toBe(true);
    for (const id of ['r0', 'r1']) ledger.release(id, 'cancelled');
    // Idle: the stale timer fires once, finds nothing, and does not re-arm.
    clock.advance(10_000);
    expect(clock.pendingTimers).toBe(0);
  });

  test('with the system clock, a lease nobody completes expires on its own', async () => {
    const cluster = new TestCluster();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 1, availBlocks: 1 },
      { id: 1, role: 'decode', availSlots: 1, availBlocks: 1 },
    ]);
    const ledger = new KvLedger({ cluster });
    const expired = new Promise<LedgerEvent>((resolve) => ledger.onRecord((e) => e.record.state === 'expired' && resolve(e)));
    const reserved = ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1, leaseMs: 5 });
    const event = await expired;
    expect(event.record.requestId).toBe('r');
    expect(event.record.endedAt).toBeGreaterThanOrEqual(reserved.deadline);
    expect(ledger.totals()).toMatchObject({ active: 0, reservedBlocks: 0, expired: 1 });
    ledger.close();
  });

  test('records expire in deadline order within one advance', () => {
    const { ledger, clock } = ledgerFixture();
    const order: string[] = [];
    ledger.onRecord(({ record }) => {
      if (record.state === 'expired') order.push(record.requestId);
    });
    ledger.reserve({ requestId: 'late', ...PAIR, pBlocks: 1, dBlocks: 1, leaseMs: 3_000 });
    ledger.reserve({ requestId: 'early', ...PAIR, pBlocks: 1, dBlocks: 1, leaseMs: 1_000 });
    ledger.reserve({ requestId: 'mid', ...PAIR, pBlocks: 1, dBlocks: 1, leaseMs: 2_000 });
    clock.advance(60_000);
    expect(order).toEqual(['early', 'mid', 'late']);
  });
});
