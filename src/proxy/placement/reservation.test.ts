import { describe, expect, test } from 'bun:test';
import { testInstance } from '../../../test/doubles/cluster.ts';
import { ledgerFixture } from '../../../test/doubles/ledger.ts';
import type { PickedPair } from '../exchange/ports.ts';
import { RequestReservation } from './reservation.ts';

// The ledger fixture's P 0 and D 1; testInstance gives both a block size of 128.
const pair: PickedPair = {
  ok: true,
  p: testInstance({ id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 }),
  d: testInstance({ id: 1, role: 'decode', availSlots: 4, availBlocks: 100 }),
};

describe('RequestReservation', () => {
  test('reserved and prefilling, then transferring, then done; capacity back to zero', () => {
    const { ledger } = ledgerFixture();
    const reservation = new RequestReservation(ledger, 'r1', 30_000);
    reservation.take(pair, 300);
    expect(ledger.get('r1')).toMatchObject({ state: 'prefilling', pBlocks: 3, dBlocks: 3 });
    reservation.transferring();
    expect(ledger.get('r1')?.state).toBe('transferring');
    reservation.end({ kind: 'complete' });
    reservation.end({ kind: 'fail', code: 'late', detail: 'ignored' });
    reservation.close();
    expect(ledger.get('r1')?.state).toBe('done');
    expect(ledger.totals()).toMatchObject({ active: 0, reservedSlots: 0, reservedBlocks: 0 });
  });

  test("the record is keyed by the proxy's id and carries the client's id beside it", () => {
    const { ledger } = ledgerFixture();
    const a = new RequestReservation(ledger, 'key-a', 30_000, 'client-id');
    const b = new RequestReservation(ledger, 'key-b', 30_000, 'client-id');
    a.take(pair, 10);
    b.take(pair, 10);
    expect(ledger.get('key-a')).toMatchObject({ state: 'prefilling', clientRequestId: 'client-id' });
    expect(ledger.get('key-b')).toMatchObject({ state: 'prefilling', clientRequestId: 'client-id' });
    expect(ledger.get('client-id')).toBeUndefined();
    a.end({ kind: 'release' });
    b.end({ kind: 'release' });
    a.close();
    b.close();
  });

  test('a completion records the bytes and blocks D reported, else 0 bytes and the reserved D blocks', () => {
    const { ledger } = ledgerFixture();
    const reported = new RequestReservation(ledger, 'r1', 30_000);
    reported.take(pair, 300);
    reported.transferring();
    reported.end({ kind: 'complete', bytes: 3 * 4096, blocks: 3 });
    reported.close();
    expect(ledger.get('r1')).toMatchObject({ state: 'done', bytes: 3 * 4096, blocksMoved: 3 });
    const silent = new RequestReservation(ledger, 'r2', 30_000);
    silent.take(pair, 300);
    silent.transferring();
    silent.end({ kind: 'complete' });
    silent.close();
    expect(ledger.get('r2')).toMatchObject({ state: 'done', bytes: 0, blocksMoved: 3 });
    expect(ledger.totals()).toMatchObject({ bytesMoved: 3 * 4096, blocksMoved: 6 });
  });

  test('release records the client leaving; fail records the code', () => {
    const { ledger } = ledgerFixture();
    const a = new RequestReservation(ledger, 'a', 30_000);
    a.take(pair, 10);
    a.end({ kind: 'release' });
    expect(ledger.get('a')).toMatchObject({ state: 'released', code: 'client_abort' });
    const b = new RequestReservation(ledger, 'b', 30_000);
    b.take(pair, 10);
    b.end({ kind: 'fail', code: 'decode_failed', detail: 'reset' });
    expect(ledger.get('b')).toMatchObject({ state: 'failed', code: 'decode_failed', detail: 'reset' });
    a.close();
    b.close();
  });

  test('a record held by another request under the same id is never touched', () => {
    const { ledger } = ledgerFixture();
    const first = new RequestReservation(ledger, 'same', 30_000);
    first.take(pair, 10);
    const second = new RequestReservation(ledger, 'same', 30_000);
    expect(() => second.take(pair, 10)).toThrow('already active');
    second.end({ kind: 'fail', code: 'x', detail: 'x' });
    expect(ledger.get('same')?.state).toBe('prefilling');
    first.end({ kind: 'complete' });
    first.close();
    second.close();
  });

  test('a record that ended without the proxy (lease run out) is left alone, without an error', () => {
    const { ledger, clock } = ledgerFixture();
    const reservation = new RequestReservation(ledger, 'old', 1_000);
    reservation.take(pair, 10);
    clock.advance(1_000);
    expect(ledger.get('old')?.state).toBe('expired');
    reservation.transferring();
    reservation.end({ kind: 'complete' });
    reservation.close();
    expect(ledger.get('old')?.state).toBe('expired');
  });

  test('not enough capacity: the ledger’s error, nothing held', () => {
    const { ledger } = ledgerFixture();
    const reservation = new RequestReservation(ledger, 'big', 30_000);
    expect(() => reservation.take(pair, 128 * 101)).toThrow('free blocks');
    reservation.end({ kind: 'fail', code: 'reserve_failed', detail: '' });
    reservation.close();
    expect(ledger.totals().reservedBlocks).toBe(0);
  });
});
