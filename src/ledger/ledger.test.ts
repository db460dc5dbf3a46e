import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../errors.ts';
import { FakeCluster } from './fake-cluster.ts';
import { ManualClock, type LeaseClock } from './lease-clock.ts';
import { KvLedger } from './ledger.ts';
import type { LedgerEvent } from './types.ts';

/** P 0 and D 1 with room for 4 slots and 100 blocks each, on a manual clock. */
function setup(options: { recentCapacity?: number; defaultLeaseMs?: number } = {}) {
  const cluster = new FakeCluster();
  cluster.refresh([
    { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
    { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
  ]);
  const clock = new ManualClock(1_000_000);
  const ledger = new KvLedger({ cluster, clock, ...options });
  return { cluster, clock, ledger };
}

function thrown(fn: () => unknown): PdlinkError {
  try {
    fn();
  } catch (err) {
    if (err instanceof PdlinkError) return err;
    throw err;
  }
  throw new Error('expected a PdlinkError, nothing was thrown');
}

const pair = { p: 0, d: 1 };

describe('reserve', () => {
  test('takes slots and blocks on both instances and returns the record', () => {
    const { ledger, clock } = setup();
    const record = ledger.reserve({ requestId: 'r1', ...pair, pBlocks: 10, dBlocks: 12 });
    expect(record).toMatchObject({ requestId: 'r1', p: 0, d: 1, slots: 1, pBlocks: 10, dBlocks: 12, state: 'reserved', code: null });
    expect(record.reservedAt).toBe(clock.now());
    expect(record.deadline).toBe(clock.now() + 30_000);
    expect(ledger.instanceLoad(0)).toEqual({
      reservedSlots: 1,
      reservedBlocks: 10,
      availSlots: 3,
      availBlocks: 90,
      reportedSlots: 4,
      reportedBlocks: 100,
    });
    expect(ledger.instanceLoad(1)).toMatchObject({ reservedSlots: 1, reservedBlocks: 12, availBlocks: 88 });
    expect(ledger.totals()).toMatchObject({ active: 1, reservedSlots: 2, reservedBlocks: 22 });
  });

  test('available is reported minus reserved: the last block fits, one more does not', () => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'a', ...pair, pBlocks: 60, dBlocks: 1 });
    ledger.reserve({ requestId: 'b', ...pair, pBlocks: 40, dBlocks: 1 });
    const err = thrown(() => ledger.reserve({ requestId: 'c', ...pair, pBlocks: 1, dBlocks: 1 }));
    expect(err.code).toBe('insufficient_capacity');
    expect(err.status).toBe(503);
    expect(err.message).toBe('instance 0 has 0 free blocks, 1 requested');
  });

  test.each([
    ['P slots', { slots: 5, pBlocks: 1, dBlocks: 1 }, 'instance 0 has 4 free slots, 5 requested'],
    ['P blocks', { pBlocks: 101, dBlocks: 1 }, 'instance 0 has 100 free blocks, 101 requested'],
    ['D blocks', { pBlocks: 1, dBlocks: 101 }, 'instance 1 has 100 free blocks, 101 requested'],
  ])('a shortfall of %s names the instance and changes nothing', (_name, demand, message) => {
    const { ledger } = setup();
    const err = thrown(() => ledger.reserve({ requestId: 'r', ...pair, ...demand }));
    expect(err.code).toBe('insufficient_capacity');
    expect(err.message).toBe(message);
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
    expect(ledger.isActive('r')).toBe(false);
  });

  test('D short of slots while P has them: atomic, P keeps nothing', () => {
    const { ledger, cluster } = setup();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 0, availBlocks: 100 },
    ]);
    const err = thrown(() => ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 }));
    expect(err.message).toBe('instance 1 has 0 free slots, 1 requested');
    expect(ledger.instanceLoad(0)?.reservedSlots).toBe(0);
  });

  test('zero blocks (a prompt shorter than one block) is a valid reservation', () => {
    const { ledger } = setup();
    expect(ledger.reserve({ requestId: 'r', ...pair, pBlocks: 0, dBlocks: 0 }).state).toBe('reserved');
    expect(ledger.totals().reservedBlocks).toBe(0);
    expect(ledger.totals().reservedSlots).toBe(2);
  });

  test('one instance as both P and D must hold both demands', () => {
    const { ledger } = setup();
    const err = thrown(() => ledger.reserve({ requestId: 'r', p: 0, d: 0, pBlocks: 60, dBlocks: 41 }));
    expect(err.message).toBe('instance 0 has 100 free blocks, 101 requested');
    ledger.reserve({ requestId: 'r', p: 0, d: 0, slots: 2, pBlocks: 60, dBlocks: 40 });
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 4, reservedBlocks: 100, availSlots: 0, availBlocks: 0 });
    ledger.release('r', 'cancelled');
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
  });

  test('an unknown instance is unavailable (503)', () => {
    const { ledger } = setup();
    const err = thrown(() => ledger.reserve({ requestId: 'r', p: 0, d: 7, pBlocks: 1, dBlocks: 1 }));
    expect(err.code).toBe('unavailable');
    expect(err.message).toBe('instance 7 is not registered');
    expect(ledger.instanceLoad(7)).toBeUndefined();
  });

  test('an active duplicate id is a conflict; the id is free again once the record ended', () => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'dup', ...pair, pBlocks: 1, dBlocks: 1 });
    const err = thrown(() => ledger.reserve({ requestId: 'dup', ...pair, pBlocks: 1, dBlocks: 1 }));
    expect(err.code).toBe('conflict');
    expect(err.status).toBe(409);
    expect(ledger.totals().reservedBlocks).toBe(2);
    ledger.release('dup', 'client_abort');
    expect(ledger.reserve({ requestId: 'dup', ...pair, pBlocks: 1, dBlocks: 1 }).state).toBe('reserved');
    expect(ledger.get('dup')?.state).toBe('reserved');
  });

  test.each([
    ['requestId', { requestId: '' }],
    ['requestId', { requestId: 'x'.repeat(513) }],
    ['requestId', { requestId: 42 }],
    ['p', { p: -1 }],
    ['p', { p: 1.5 }],
    ['d', { d: '1' }],
    ['slots', { slots: Number.NaN }],
    ['pBlocks', { pBlocks: 2 ** 53 }],
    ['dBlocks', { dBlocks: undefined }],
    ['leaseMs', { leaseMs: 0 }],
    ['leaseMs', { leaseMs: Number.POSITIVE_INFINITY }],
    ['leaseMs', { leaseMs: 2 ** 31 }],
  ])('a bad %s is a 400 naming the field', (path, patch) => {
    const { ledger } = setup();
    const request = { requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1, ...patch } as never;
    const err = thrown(() => ledger.reserve(request));
    expect(err.code).toBe('bad_request');
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]?.path).toBe(path);
    expect(ledger.totals().active).toBe(0);
  });
});

describe('transitions', () => {
  test('reserved → prefilling → transferring → done, with timestamps, lease renewal and totals', () => {
    const { ledger, clock } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 8, dBlocks: 8 });
    clock.advance(100);
    const prefilling = ledger.begin('r', 'prefilling');
    expect(prefilling).toMatchObject({ state: 'prefilling', prefillingAt: clock.now(), transferringAt: null });
    expect(prefilling.deadline).toBe(clock.now() + 30_000);
    clock.advance(200);
    expect(ledger.begin('r', 'transferring')).toMatchObject({ state: 'transferring', transferringAt: clock.now() });
    clock.advance(5);
    const done = ledger.complete('r', { bytes: 8 << 20, blocks: 8 });
    expect(done).toMatchObject({ state: 'done', bytes: 8 << 20, blocksMoved: 8, endedAt: clock.now(), code: null });
    expect(ledger.isActive('r')).toBe(false);
    expect(ledger.totals()).toMatchObject({ active: 0, reservedBlocks: 0, reservedSlots: 0, bytesMoved: 8 << 20, blocksMoved: 8, done: 1 });
  });

  test('a phase may be skipped forward: reserved → transferring', () => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 3 });
    expect(ledger.begin('r', 'transferring').prefillingAt).toBeNull();
    expect(ledger.complete('r').blocksMoved).toBe(3);
  });

  test.each([
    [['prefilling'], 'prefilling', 'transfer "r" is prefilling, cannot begin prefilling'],
    [['transferring'], 'prefilling', 'transfer "r" is transferring, cannot begin prefilling'],
    [['prefilling', 'transferring'], 'transferring', 'transfer "r" is transferring, cannot begin transferring'],
  ] as const)('after %p, begin(%s) is a conflict', (steps, phase, message) => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
    for (const step of steps) ledger.begin('r', step);
    const err = thrown(() => ledger.begin('r', phase));
    expect(err.code).toBe('conflict');
    expect(err.message).toBe(message);
  });

  test('complete before any phase began is a conflict and keeps the reservation', () => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
    const err = thrown(() => ledger.complete('r'));
    expect(err.code).toBe('conflict');
    expect(err.message).toBe('transfer "r" is reserved, cannot complete before a phase began');
    expect(ledger.get('r')?.state).toBe('reserved');
    expect(ledger.totals().reservedBlocks).toBe(2);
  });

  test('complete from prefilling is done without a transfer duration', () => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
    ledger.begin('r', 'prefilling');
    expect(ledger.complete('r', { bytes: 0, blocks: 0 })).toMatchObject({ state: 'done', transferringAt: null });
  });

  test('fail records the code and detail and releases everything', () => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 5, dBlocks: 5 });
    ledger.begin('r', 'transferring');
    const failed = ledger.fail('r', 'LLM_WAIT_PROC_TIMEOUT', 'pull timed out');
    expect(failed).toMatchObject({ state: 'failed', code: 'LLM_WAIT_PROC_TIMEOUT', detail: 'pull timed out' });
    expect(ledger.totals()).toMatchObject({ active: 0, reservedBlocks: 0, failed: 1 });
  });

  test.each(['client_abort', 'unlink', 'cancelled', 'shutdown'] as const)('release(%s) ends the record as released', (reason) => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 5, dBlocks: 5 });
    expect(ledger.release('r', reason)).toMatchObject({ state: 'released', code: reason });
    expect(ledger.totals()).toMatchObject({ reservedBlocks: 0, reservedSlots: 0, released: 1 });
  });

  test('every operation on an ended record is a conflict naming its state', () => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
    ledger.begin('r', 'transferring');
    ledger.complete('r');
    const attempts: [() => unknown, string][] = [
      [() => ledger.begin('r', 'transferring'), 'transfer "r" is done, cannot begin transferring'],
      [() => ledger.complete('r'), 'transfer "r" is done, cannot complete'],
      [() => ledger.fail('r', 'x'), 'transfer "r" is done, cannot fail'],
      [() => ledger.release('r', 'client_abort'), 'transfer "r" is done, cannot release'],
      [() => ledger.extend('r', 5), 'transfer "r" is done, cannot extend its lease'],
    ];
    for (const [attempt, message] of attempts) {
      const err = thrown(attempt);
      expect(err.code).toBe('conflict');
      expect(err.message).toBe(message);
    }
    expect(ledger.totals()).toMatchObject({ done: 1, failed: 0, released: 0, reservedBlocks: 0 });
  });

  test('operations on an unknown request are 404', () => {
    const { ledger } = setup();
    for (const attempt of [
      () => ledger.begin('nope', 'prefilling'),
      () => ledger.complete('nope'),
      () => ledger.fail('nope', 'x'),
      () => ledger.release('nope', 'client_abort'),
      () => ledger.extend('nope'),
    ]) {
      const err = thrown(attempt);
      expect(err.code).toBe('not_found');
      expect(err.message).toBe('transfer "nope" not found');
    }
    expect(ledger.get('nope')).toBeUndefined();
  });

  test.each([
    ['phase', (l: KvLedger) => l.begin('r', 'decoding' as never)],
    ['requestId', (l: KvLedger) => l.begin('', 'prefilling')],
    ['bytes', (l: KvLedger) => l.complete('r', { bytes: -1 })],
    ['blocks', (l: KvLedger) => l.complete('r', { blocks: 0.5 })],
    ['code', (l: KvLedger) => l.fail('r', '')],
    ['reason', (l: KvLedger) => l.release('r', 'bored' as never)],
    ['ms', (l: KvLedger) => l.extend('r', -5)],
  ])('a bad %s is a 400 and the record is untouched', (path, attempt) => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
    ledger.begin('r', 'prefilling');
    const err = thrown(() => attempt(ledger));
    expect(err.code).toBe('bad_request');
    expect(err.issues[0]?.path).toBe(path);
    expect(ledger.get('r')).toMatchObject({ state: 'prefilling', bytes: 0 });
  });
});

describe('refresh and removal', () => {
  test('an update replaces the reported values; reservations stay', () => {
    const { ledger, cluster } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 30, dBlocks: 30 });
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 2, availBlocks: 20 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    // Reported 20 while 30 are held here: nothing is free, and nothing is over-allocated anew.
    expect(ledger.instanceLoad(0)).toEqual({
      reservedSlots: 1,
      reservedBlocks: 30,
      availSlots: 1,
      availBlocks: 0,
      reportedSlots: 2,
      reportedBlocks: 20,
    });
    expect(thrown(() => ledger.reserve({ requestId: 's', ...pair, pBlocks: 1, dBlocks: 1 })).code).toBe('insufficient_capacity');
    ledger.release('r', 'client_abort');
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedBlocks: 0, availBlocks: 20 });
  });

  test('removing an instance fails every record on it and releases the other side', () => {
    const { ledger, cluster } = setup();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
      { id: 2, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    ledger.reserve({ requestId: 'to-1', p: 0, d: 1, pBlocks: 10, dBlocks: 10 });
    ledger.reserve({ requestId: 'to-2', p: 0, d: 2, pBlocks: 7, dBlocks: 7 });
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 2, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    expect(ledger.get('to-1')).toMatchObject({ state: 'failed', code: 'instance_removed', detail: 'instance 1 was removed by a refresh' });
    expect(ledger.get('to-2')?.state).toBe('reserved');
    expect(ledger.instanceLoad(1)).toBeUndefined();
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 1, reservedBlocks: 7 });
    expect(ledger.totals()).toMatchObject({ active: 1, reservedSlots: 2, reservedBlocks: 14, failed: 1 });
  });

  test('a role change (removal plus addition) fails the records and starts a fresh account', () => {
    const { ledger, cluster } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 10, dBlocks: 10 });
    cluster.refresh([
      { id: 0, role: 'decode', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    expect(ledger.get('r')?.code).toBe('instance_removed');
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0, availBlocks: 100 });
    expect(ledger.totals().reservedBlocks).toBe(0);
  });

  test('an added instance becomes reservable', () => {
    const { ledger, cluster } = setup();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
      { id: 9, role: 'decode', availSlots: 1, availBlocks: 5 },
    ]);
    expect(ledger.reserve({ requestId: 'r', p: 0, d: 9, pBlocks: 5, dBlocks: 5 }).d).toBe(9);
  });

  test('linkLost releases only the records of that P→D pair', () => {
    const { ledger, cluster } = setup();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 8, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 8, availBlocks: 100 },
      { id: 2, role: 'decode', availSlots: 8, availBlocks: 100 },
    ]);
    ledger.reserve({ requestId: 'a', p: 0, d: 1, pBlocks: 1, dBlocks: 1 });
    ledger.reserve({ requestId: 'b', p: 0, d: 1, pBlocks: 1, dBlocks: 1 });
    ledger.reserve({ requestId: 'c', p: 0, d: 2, pBlocks: 1, dBlocks: 1 });
    const released = ledger.linkLost(0, 1);
    expect(released.map((r) => r.requestId).sort()).toEqual(['a', 'b']);
    expect(released.every((r) => r.state === 'released' && r.code === 'unlink')).toBe(true);
    expect(ledger.isActive('c')).toBe(true);
    expect(ledger.linkLost(0, 1)).toEqual([]);
    expect(ledger.linkLost(1, 0)).toEqual([]);
    expect(ledger.linkLost(42, 1)).toEqual([]);
  });
});

describe('leases', () => {
  test('a record nobody completes expires at its deadline, not before', () => {
    const { ledger, clock } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 9, dBlocks: 9, leaseMs: 1_000 });
    clock.advance(999);
    expect(ledger.isActive('r')).toBe(true);
    clock.advance(1);
    const record = ledger.get('r');
    expect(record).toMatchObject({ state: 'expired', code: 'lease_expired', endedAt: 1_001_000 });
    expect(ledger.totals()).toMatchObject({ active: 0, reservedBlocks: 0, reservedSlots: 0, expired: 1 });
    expect(clock.pendingTimers).toBe(0);
  });

  test('the timer expires records with no call into the ledger (event observed)', () => {
    const { ledger, clock } = setup({ defaultLeaseMs: 500 });
    const events: LedgerEvent[] = [];
    ledger.onRecord((e) => events.push(e));
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
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
    const cluster = new FakeCluster();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 1, availBlocks: 10 },
      { id: 1, role: 'decode', availSlots: 1, availBlocks: 10 },
    ]);
    const ledger = new KvLedger({ cluster, clock: lazyClock });
    ledger.reserve({ requestId: 'old', ...pair, pBlocks: 10, dBlocks: 10, leaseMs: 100 });
    now = 100;
    // The only slot is held by an expired lease: the new reservation must see it free.
    expect(ledger.reserve({ requestId: 'new', ...pair, pBlocks: 10, dBlocks: 10 }).state).toBe('reserved');
    expect(ledger.get('old')?.state).toBe('expired');
  });

  test('begin renews the lease; extend sets it to end ms from now', () => {
    const { ledger, clock } = setup({ defaultLeaseMs: 1_000 });
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
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
    const { ledger, clock } = setup();
    for (let i = 0; i < 4; i++) ledger.reserve({ requestId: `r${i}`, ...pair, pBlocks: 1, dBlocks: 1, leaseMs: 1_000 * (4 - i) });
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
    const cluster = new FakeCluster();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 1, availBlocks: 1 },
      { id: 1, role: 'decode', availSlots: 1, availBlocks: 1 },
    ]);
    const ledger = new KvLedger({ cluster });
    const expired = new Promise<LedgerEvent>((resolve) => ledger.onRecord((e) => e.record.state === 'expired' && resolve(e)));
    const reserved = ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1, leaseMs: 5 });
    const event = await expired;
    expect(event.record.requestId).toBe('r');
    expect(event.record.endedAt).toBeGreaterThanOrEqual(reserved.deadline);
    expect(ledger.totals()).toMatchObject({ active: 0, reservedBlocks: 0, expired: 1 });
    ledger.close();
  });

  test('records expire in deadline order within one advance', () => {
    const { ledger, clock } = setup();
    const order: string[] = [];
    ledger.onRecord(({ record }) => {
      if (record.state === 'expired') order.push(record.requestId);
    });
    ledger.reserve({ requestId: 'late', ...pair, pBlocks: 1, dBlocks: 1, leaseMs: 3_000 });
    ledger.reserve({ requestId: 'early', ...pair, pBlocks: 1, dBlocks: 1, leaseMs: 1_000 });
    ledger.reserve({ requestId: 'mid', ...pair, pBlocks: 1, dBlocks: 1, leaseMs: 2_000 });
    clock.advance(60_000);
    expect(order).toEqual(['early', 'mid', 'late']);
  });
});

describe('events, snapshot, recent, close', () => {
  test('listeners see every change; a throwing listener is logged and does not break the ledger', () => {
    const { ledger } = setup();
    const seen: string[] = [];
    const logged: unknown[] = [];
    const originalError = console.error;
    console.error = (...args: unknown[]) => logged.push(args);
    try {
      ledger.onRecord(() => {
        throw new Error('listener bug');
      });
      const off = ledger.onRecord(({ record, from }) => seen.push(`${from}→${record.state}`));
      ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
      ledger.begin('r', 'prefilling');
      ledger.fail('r', 'upstream_failed');
      off();
      ledger.reserve({ requestId: 's', ...pair, pBlocks: 1, dBlocks: 1 });
    } finally {
      console.error = originalError;
    }
    expect(seen).toEqual(['null→reserved', 'reserved→prefilling', 'prefilling→failed']);
    expect(logged).toHaveLength(4);
    expect(ledger.totals()).toMatchObject({ active: 1, failed: 1, reservedBlocks: 2 });
  });

  test('a listener that reserves while an instance is being removed cannot reserve on it', () => {
    const { ledger, cluster } = setup();
    ledger.reserve({ requestId: 'r', ...pair, pBlocks: 1, dBlocks: 1 });
    const errors: string[] = [];
    ledger.onRecord(({ record }) => {
      if (record.state !== 'failed') return;
      try {
        ledger.reserve({ requestId: 'retry', ...pair, pBlocks: 1, dBlocks: 1 });
      } catch (err) {
        errors.push((err as Error).message);
      }
    });
    cluster.refresh([{ id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 }]);
    expect(errors).toEqual(['instance 1 is not registered']);
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
  });

  test('snapshot is plain data that does not alias the ledger', () => {
    const { ledger } = setup();
    ledger.reserve({ requestId: 'a', ...pair, pBlocks: 2, dBlocks: 3 });
    ledger.reserve({ requestId: 'b', ...pair, pBlocks: 1, dBlocks: 1 });
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
    const { ledger } = setup({ recentCapacity: 2 });
    for (const id of ['a', 'b', 'c']) {
      ledger.reserve({ requestId: id, ...pair, pBlocks: 1, dBlocks: 1 });
      ledger.release(id, 'cancelled');
    }
    expect(ledger.snapshot().recent.map((r) => r.requestId)).toEqual(['c', 'b']);
    expect(ledger.get('a')).toBeUndefined();
    expect(thrown(() => ledger.release('a', 'cancelled')).code).toBe('not_found');
    expect(ledger.totals().released).toBe(3);
  });

  test('close releases everything, unsubscribes, disarms, and refuses new work; twice is fine', () => {
    const { ledger, cluster, clock } = setup();
    ledger.reserve({ requestId: 'a', ...pair, pBlocks: 2, dBlocks: 3 });
    ledger.reserve({ requestId: 'b', ...pair, pBlocks: 1, dBlocks: 1 });
    ledger.close();
    ledger.close();
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0, released: 2 });
    expect(ledger.get('a')).toMatchObject({ state: 'released', code: 'shutdown' });
    expect(cluster.listenerCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(thrown(() => ledger.reserve({ requestId: 'c', ...pair, pBlocks: 1, dBlocks: 1 })).code).toBe('unavailable');
  });

  test('bad options are refused by name', () => {
    const cluster = new FakeCluster();
    expect(thrown(() => new KvLedger({ cluster, defaultLeaseMs: 0 })).issues[0]?.path).toBe('defaultLeaseMs');
    expect(thrown(() => new KvLedger({ cluster, recentCapacity: -1 })).issues[0]?.path).toBe('recentCapacity');
  });

  test('instances known before the ledger was created are reservable', () => {
    const cluster = new FakeCluster();
    cluster.refresh([
      { id: 3, role: 'prefill', availSlots: 1, availBlocks: 1 },
      { id: 4, role: 'decode', availSlots: 1, availBlocks: 1 },
    ]);
    const ledger = new KvLedger({ cluster, clock: new ManualClock() });
    expect(ledger.reserve({ requestId: 'r', p: 3, d: 4, pBlocks: 1, dBlocks: 1 }).state).toBe('reserved');
    ledger.close();
  });
});
