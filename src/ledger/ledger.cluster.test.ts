import { describe, expect, test } from 'bun:test';
import { ledgerFixture, PAIR, thrownBy } from '../../test/doubles/ledger.ts';

describe('refresh and removal', () => {
  test('an update replaces the reported values; reservations stay', () => {
    const { ledger, cluster } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 30, dBlocks: 30 });
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
    expect(thrownBy(() => ledger.reserve({ requestId: 's', ...PAIR, pBlocks: 1, dBlocks: 1 })).code).toBe('insufficient_capacity');
    ledger.release('r', 'client_abort');
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedBlocks: 0, availBlocks: 20 });
  });

  test('removing a P fails every record on it and releases the D side', () => {
    const { ledger, cluster } = ledgerFixture();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 3, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    ledger.reserve({ requestId: 'from-0', p: 0, d: 1, pBlocks: 10, dBlocks: 10 });
    ledger.reserve({ requestId: 'from-3', p: 3, d: 1, pBlocks: 7, dBlocks: 7 });
    cluster.refresh([
      { id: 3, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    expect(ledger.get('from-0')).toMatchObject({
      state: 'failed',
      code: 'instance_removed',
      detail: 'instance 0 was removed by a refresh',
    });
    expect(ledger.get('from-3')?.state).toBe('reserved');
    expect(ledger.instanceLoad(0)).toBeUndefined();
    expect(ledger.instanceLoad(1)).toMatchObject({ reservedSlots: 1, reservedBlocks: 7 });
    expect(ledger.totals()).toMatchObject({ active: 1, reservedSlots: 2, reservedBlocks: 14, failed: 1 });
  });

  test('removing a D keeps the record on P’s side (P still holds its blocks), ready to move to another D', () => {
    const { ledger, cluster } = ledgerFixture();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
      { id: 2, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    ledger.reserve({ requestId: 'to-1', p: 0, d: 1, pBlocks: 10, dBlocks: 10, phase: 'transferring' });
    const events: { d: number; movedFrom?: number; state: string }[] = [];
    ledger.onRecord(({ record, movedFrom }) =>
      events.push({ d: record.d, state: record.state, ...(movedFrom === undefined ? {} : { movedFrom }) }),
    );
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 2, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    expect(ledger.get('to-1')).toMatchObject({ state: 'transferring', d: 1, decodeHeld: false });
    expect(events).toEqual([{ d: 1, state: 'transferring', movedFrom: 1 }]);
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 1, reservedBlocks: 10 });
    expect(ledger.totals()).toMatchObject({ active: 1, reservedSlots: 1, reservedBlocks: 10 });
    // The same id back is a new account: the record holds nothing on it.
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
      { id: 2, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    expect(ledger.instanceLoad(1)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
    ledger.moveDecode('to-1', 2, 6);
    expect(ledger.get('to-1')).toMatchObject({ d: 2, dBlocks: 6, decodeHeld: true });
    expect(ledger.totals()).toMatchObject({ reservedSlots: 2, reservedBlocks: 16 });
    ledger.complete('to-1');
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
    expect([0, 1, 2].map((id) => ledger.instanceLoad(id)?.reservedBlocks)).toEqual([0, 0, 0]);
  });

  test('a record whose D left ends with its request: only P’s side is given back', () => {
    const { ledger, cluster } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 10, dBlocks: 12, phase: 'prefilling' });
    cluster.refresh([{ id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 }]);
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    ledger.fail('r', 'decode_failed');
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
    expect(ledger.instanceLoad(1)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0 });
  });

  test('a role change (removal plus addition) fails the records and starts a fresh account', () => {
    const { ledger, cluster } = ledgerFixture();
    ledger.reserve({ requestId: 'r', ...PAIR, pBlocks: 10, dBlocks: 10 });
    cluster.refresh([
      { id: 0, role: 'decode', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
    ]);
    expect(ledger.get('r')?.code).toBe('instance_removed');
    expect(ledger.instanceLoad(0)).toMatchObject({ reservedSlots: 0, reservedBlocks: 0, availBlocks: 100 });
    expect(ledger.totals().reservedBlocks).toBe(0);
  });

  test('an added instance becomes reservable', () => {
    const { ledger, cluster } = ledgerFixture();
    cluster.refresh([
      { id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 },
      { id: 1, role: 'decode', availSlots: 4, availBlocks: 100 },
      { id: 9, role: 'decode', availSlots: 1, availBlocks: 5 },
    ]);
    expect(ledger.reserve({ requestId: 'r', p: 0, d: 9, pBlocks: 5, dBlocks: 5 }).d).toBe(9);
  });

  test('linkLost releases only the records of that P→D pair', () => {
    const { ledger, cluster } = ledgerFixture();
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
    expect(thrownBy(() => ledger.linkLost('0' as never, 1)).issues[0]?.path).toBe('pId');
    expect(thrownBy(() => ledger.linkLost(0, -1)).issues[0]?.path).toBe('dId');
  });
});
