import { describe, expect, test } from 'bun:test';
import type { KvLedger } from './ledger.ts';
import { ledgerFixture, PAIR, thrownBy } from '../../test/doubles/ledger.ts';

describe('reserve', () => {
  test('a phase given with the reservation is begun at once: one change for the listeners', () => {
    const { ledger, clock } = ledgerFixture();
    const seen: string[] = [];
    ledger.onRecord(({ record, from }) => seen.push(`${from}→${record.state}`));
    const record = ledger.reserve({ requestId: 'r1', ...PAIR, pBlocks: 10, dBlocks: 12, phase: 'prefilling' });
    expect(record).toMatchObject({ state: 'prefilling', prefillingAt: clock.now(), transferringAt: null, reservedAt: clock.now() });
    expect(ledger.totals()).toMatchObject({ active: 1, reservedSlots: 2, reservedBlocks: 22 });
    // The phases go on from there as after begin(): forward only.
    expect(thrownBy(() => ledger.begin('r1', 'prefilling')).code).toBe('conflict');
    clock.advance(5);
    expect(ledger.begin('r1', 'transferring').transferringAt).toBe(clock.now());
    ledger.complete('r1');
    const skipped = ledger.reserve({ requestId: 'r2', ...PAIR, pBlocks: 1, dBlocks: 1, phase: 'transferring' });
    expect([skipped.state, skipped.prefillingAt, skipped.transferringAt]).toEqual(['transferring', null, clock.now()]);
    expect(seen).toEqual(['null→prefilling', 'prefilling→transferring', 'transferring→done', 'null→transferring']);
  });

  test('an unknown phase is refused naming the field, and nothing is reserved', () => {
    const { ledger } = ledgerFixture();
    for (const phase of ['reserved', 'done', 1]) {
      const err = thrownBy(() => ledger.reserve({ requestId: 'r1', ...PAIR, pBlocks: 1, dBlocks: 1, phase: phase as 'prefilling' }));
      expect([err.code, err.message]).toEqual(['bad_request', 'phase: must be prefilling or transferring']);
    }
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
    expect(ledger.isActive('r1')).toBe(false);
  });

  test('takes slots and blocks on both instances and returns the record', () => {
    const { ledger, clock } = ledgerFixture();
    const record = ledger.reserve({ requestId: 'r1', ...PAIR, pBlocks: 10, dBlocks: 12 });
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

  test("the client's request id is kept beside the key: many records may share it, a bad one is named", () => {
    const { ledger } = ledgerFixture();
    const a = ledger.reserve({ requestId: 'k1', clientRequestId: 'shared', ...PAIR, pBlocks: 1, dBlocks: 1 });
    const b = ledger.reserve({ requestId: 'k2', clientRequestId: 'shared', ...PAIR, pBlocks: 1, dBlocks: 1 });
    expect([a.clientRequestId, b.clientRequestId]).toEqual(['shared', 'shared']);
    expect(ledger.reserve({ requestId: 'k3', ...PAIR, pBlocks: 1, dBlocks: 1 }).clientRequestId).toBeNull();
    const err = thrownBy(() => ledger.reserve({ requestId: 'k4', clientRequestId: '', ...PAIR, pBlocks: 1, dBlocks: 1 }));
    expect(err.message).toBe('clientRequestId: must be a non-empty string');
    expect(ledger.isActive('k4')).toBe(false);
    expect(ledger.totals().active).toBe(3);
  });

  test('available is reported minus reserved: the last block fits, one more does not', () => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'a', ...PAIR, pBlocks: 60, dBlocks: 1 });
    ledger.reserve({ requestId: 'b', ...PAIR, pBlocks: 40, dBlocks: 1 });
    const err = thrownBy(() => ledger.reserve({ requestId: 'c', ...PAIR, pBlocks: 1, dBlocks: 1 }));
    expect(err.code).toBe('insufficient_capacity');
    expect(err.status).toBe(503);
    expect(err.message).toBe('instance 0 has 0 free blocks, 1 requested');
  });

  test.each([
    ['P slots', { slots: 5, pBlocks: 1, dBlocks: 1 }, 'instance 0 has 4 free slots, 5 requested'],
    ['P blocks', { pBlocks: 101, dBlocks: 1 }, 'instance 0 has 100 free blocks, 101 requested'],
    ['D blocks', { pBlocks: 1, dBlocks: 101 }, 'instance 1 has 100 free blocks, 101 requested'],
  ])('a shortfall of %s names the instance and changes nothing', (_name, demand, message) => {
    const { ledger } = ledgerFixture();
    const err = thrownBy(() => ledger.reserve({ requestId: 'r', ...PAIR, ...demand }));
    expect(err.code).toBe('insufficient_capacity');
    expect(err.message).toBe(message);
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
    expect(ledger.isActive('r')).toBe(false);
  });

  test('D short of slots while P has them: atomic, P keeps nothing', () => {
    const { ledger, cluster } = ledgerFixture();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 0, availBlocks: 100 },
    ]);
    const err = thrownBy(() => ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 }));
    expect(err.message).toBe('instance 1 has 0 free slots, 1 requested');
    expect(ledger.instanceLoad(0)?.reservedSlots).toBe(0);
  });

  test('zero blocks (a prompt shorter than one block) is a valid reservation', () => {
    const { ledger } = ledgerFixture();
    expect(ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 0, dBlocks: 0 }).state).toBe('reserved');
    expect(ledger.totals().reservedBlocks).toBe(0);
    expect(ledger.totals().reservedSlots).toBe(2);
  });

  test('one instance as both P and D must hold both demands', () => {
    const { ledger } = ledgerFixture();
    const err = thrownBy(() => ledger.reserve({ requestId: 'r', p: 0, d: 0, pBlocks: 60, dBlocks: 41 }));
    expect(err.message).toBe('instance 0 has 100 free blocks, 101 requested');
    ledger.reserve({ requestId: 'r', p: 0, d: 0, slots: 2, pBlocks: 60, dBlocks: 40 });
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 4, reservedBlocks: 100, availSlots: 0, availBlocks: 0 });
    ledger.release('r', 'cancelled');
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
  });

  test('an unknown instance is unavailable (503)', () => {
    const { ledger } = ledgerFixture();
    const err = thrownBy(() => ledger.reserve({ requestId: 'r', p: 0, d: 7, pBlocks: 1, dBlocks: 1 }));
    expect(err.code).toBe('unavailable');
    expect(err.message).toBe('instance 7 is not registered');
    expect(ledger.instanceLoad(7)).toBeUndefined();
  });

  test('an active duplicate id is a conflict; the id is free again once the record ended', () => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'dup', ...PAIR, pBlocks: 1, dBlocks: 1 });
    const err = thrownBy(() => ledger.reserve({ requestId: 'dup', ...PAIR, pBlocks: 1, dBlocks: 1 }));
    expect(err.code).toBe('conflict');
    expect(err.status).toBe(409);
    expect(ledger.totals().reservedBlocks).toBe(2);
    ledger.release('dup', 'client_abort');
    expect(ledger.reserve({ requestId: 'dup', ...PAIR, pBlocks: 1, dBlocks: 1 }).state).toBe('reserved');
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
    const { ledger } = ledgerFixture();
    const request = { requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1, ...patch } as never;
    const err = thrownBy(() => ledger.reserve(request));
    expect(err.code).toBe('bad_request');
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]?.path).toBe(path);
    expect(ledger.totals().active).toBe(0);
  });
});

describe('transitions', () => {
  test('reserved → prefilling → transferring → done, with timestamps, lease renewal and totals', () => {
    const { ledger, clock } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 8, dBlocks: 8 });
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
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 3 });
    expect(ledger.begin('r', 'transferring').prefillingAt).toBeNull();
    expect(ledger.complete('r').blocksMoved).toBe(3);
  });

  test.each([
    [['prefilling'], 'prefilling', 'transfer "r" is prefilling, cannot begin prefilling'],
    [['transferring'], 'prefilling', 'transfer "r" is transferring, cannot begin prefilling'],
    [['prefilling', 'transferring'], 'transferring', 'transfer "r" is transferring, cannot begin transferring'],
  ] as const)('after %p, begin(%s) is a conflict', (steps, phase, message) => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
    for (const step of steps) ledger.begin('r', step);
    const err = thrownBy(() => ledger.begin('r', phase));
    expect(err.code).toBe('conflict');
    expect(err.message).toBe(message);
  });

  test('complete before any phase began is a conflict and keeps the reservation', () => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
    const err = thrownBy(() => ledger.complete('r'));
    expect(err.code).toBe('conflict');
    expect(err.message).toBe('transfer "r" is reserved, cannot complete before a phase began');
    expect(ledger.get('r')?.state).toBe('reserved');
    expect(ledger.totals().reservedBlocks).toBe(2);
  });

  test('complete from prefilling is done without a transfer duration', () => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
    ledger.begin('r', 'prefilling');
    expect(ledger.complete('r', { bytes: 0, blocks: 0 })).toMatchObject({ state: 'done', transferringAt: null });
  });

  test('fail records the code and detail and releases everything', () => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 5, dBlocks: 5 });
    ledger.begin('r', 'transferring');
    const failed = ledger.fail('r', 'LLM_WAIT_PROC_TIMEOUT', 'pull timed out');
    expect(failed).toMatchObject({ state: 'failed', code: 'LLM_WAIT_PROC_TIMEOUT', detail: 'pull timed out' });
    expect(ledger.totals()).toMatchObject({ active: 0, reservedBlocks: 0, failed: 1 });
  });

  test.each(['client_abort', 'unlink', 'cancelled', 'shutdown'] as const)('release(%s) ends the record as released', (reason) => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 5, dBlocks: 5 });
    expect(ledger.release('r', reason)).toMatchObject({ state: 'released', code: reason });
    expect(ledger.totals()).toMatchObject({ reservedBlocks: 0, reservedSlots: 0, released: 1 });
  });

  test('every operation on an ended record is a conflict naming its state', () => {
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
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
      const err = thrownBy(attempt);
      expect(err.code).toBe('conflict');
      expect(err.message).toBe(message);
    }
    expect(ledger.totals()).toMatchObject({ done: 1, failed: 0, released: 0, reservedBlocks: 0 });
  });

  test('operations on an unknown request are 404', () => {
    const { ledger } = ledgerFixture();
    for (const attempt of [
      () => ledger.begin('nope', 'prefilling'),
      () => ledger.complete('nope'),
      () => ledger.fail('nope', 'x'),
      () => ledger.release('nope', 'client_abort'),
      () => ledger.extend('nope'),
    ]) {
      const err = thrownBy(attempt);
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
    const { ledger } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 1, dBlocks: 1 });
    ledger.begin('r', 'prefilling');
    const err = thrownBy(() => attempt(ledger));
    expect(err.code).toBe('bad_request');
    expect(err.issues[0]?.path).toBe(path);
    expect(ledger.get('r')).toMatchObject({ state: 'prefilling', bytes: 0 });
  });
});

describe('moveDecode', () => {
  function withSecondDecode() {
    const fixture = ledgerFixture();
    fixture.cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
      { id: 2, role: 'decode', availSlots: 4, availBlocks: 20 },
    ]);
    return fixture;
  }

  test('the decode side moves with its blocks, P keeps its own, and the lease starts again', () => {
    const { ledger, clock } = withSecondDecode();
    const events: { d: number; movedFrom?: number }[] = [];
    ledger.onRecord((e) => events.push({ d: e.record.d, ...(e.movedFrom === undefined ? {} : { movedFrom: e.movedFrom }) }));
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 10, dBlocks: 12 });
    ledger.begin('r', 'transferring');
    clock.advance(5_000);
    const moved = ledger.moveDecode('r', 2, 8);
    expect(moved).toMatchObject({ p: 0, d: 2, pBlocks: 10, dBlocks: 8, state: 'transferring', deadline: clock.now() + 30_000 });
    expect(ledger.instanceLoad(1)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
    expect(ledger.instanceLoad(2)).toMatchObject({ reservedSlots: 1, reservedBlocks: 8 });
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 1, reservedBlocks: 10 });
    expect(ledger.totals()).toMatchObject({ reservedSlots: 2, reservedBlocks: 18 });
    expect(events.at(-1)).toEqual({ d: 2, movedFrom: 1 });
    ledger.complete('r');
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
    expect(ledger.instanceLoad(2)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
  });

  test('a new D without room refuses and the record keeps its old D', () => {
    const { ledger } = withSecondDecode();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 10, dBlocks: 30, phase: 'transferring' });
    const err = thrownBy(() => ledger.moveDecode('r', 2, 30));
    expect(err.code).toBe('insufficient_capacity');
    expect(err.message).toBe('instance 2 has 20 free blocks, 30 requested');
    expect(ledger.get('r')).toMatchObject({ d: 1, dBlocks: 30 });
    expect(ledger.instanceLoad(1)).toMatchObject({ reservedBlocks: 30 });
    expect(thrownBy(() => ledger.moveDecode('r', 9, 1)).code).toBe('unavailable');
    expect(thrownBy(() => ledger.moveDecode('gone', 2, 1)).code).toBe('not_found');
  });

  test('only while the record proves P holds the blocks: P answered, and its hold (the lease since then) has not run out', () => {
    const { ledger, clock } = withSecondDecode();
    ledger.reserve({ requestId: 'early', ...PAIR, pBlocks: 10, dBlocks: 12, phase: 'prefilling' });
    const early = thrownBy(() => ledger.moveDecode('early', 2, 8));
    expect(early.code).toBe('conflict');
    expect(early.message).toContain('P has not answered');
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 10, dBlocks: 12, leaseMs: 10_000, phase: 'transferring' });
    // Renewals keep the record alive, but P's hold counts from P's answer.
    clock.advance(6_000);
    ledger.extend('r');
    clock.advance(4_001);
    const late = thrownBy(() => ledger.moveDecode('r', 2, 8));
    expect(late.code).toBe('conflict');
    expect(late.message).toBe(
      'transfer "r" is transferring, cannot move its decode side: P answered 10001 ms ago, beyond its hold of the blocks (the lease, 10000 ms)',
    );
    expect(ledger.get('r')).toMatchObject({ d: 1, dBlocks: 12, state: 'transferring' });
    expect(ledger.instanceLoad(2)).toMatchObject({ reservedSlots: 0 });
  });

  test('at the edge of P’s hold it still moves, and the lease starts again', () => {
    const { ledger, clock } = withSecondDecode();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 10, dBlocks: 12, leaseMs: 10_000, phase: 'transferring' });
    clock.advance(6_000);
    ledger.extend('r');
    clock.advance(4_000);
    expect(ledger.moveDecode('r', 2, 8)).toMatchObject({ d: 2, deadline: clock.now() + 10_000 });
  });
});

describe('reservedOn', () => {
  test('is what the instance holds, read in place (no copy per call), with leases due expired first', () => {
    const { ledger, clock } = ledgerFixture();
    ledger.reserve({ requestId: 'r1', ...PAIR, pBlocks: 10, dBlocks: 12, leaseMs: 1_000 });
    expect(ledger.reservedOn(0)).toMatchObject({ reservedSlots: 1, reservedBlocks: 10 });
    expect(ledger.reservedOn(1)).toMatchObject({ reservedSlots: 1, reservedBlocks: 12 });
    expect(ledger.reservedOn(0)).toBe(ledger.reservedOn(0)!);
    expect(ledger.reservedOn(7)).toBeUndefined();
    clock.advance(1_000);
    expect(ledger.reservedOn(0)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
    expect(ledger.isActive('r1')).toBe(false);
  });
});
