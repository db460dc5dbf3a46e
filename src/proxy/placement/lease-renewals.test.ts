import { describe, expect, test } from 'bun:test';
import { testInstance } from '../../../test/doubles/cluster.ts';
import { ledgerFixture } from '../../../test/doubles/ledger.ts';
import { LeaseRenewals, leaseRenewals } from './lease-renewals.ts';
import type { PickedPair } from '../exchange/ports.ts';
import { RequestReservation } from './reservation.ts';

const pair: PickedPair = {
  ok: true,
  p: testInstance({ id: 0, role: 'prefill', availSlots: 4, availBlocks: 100 }),
  d: testInstance({ id: 1, role: 'decode', availSlots: 4, availBlocks: 100 }),
};

/** Polls `ok` until it holds, for at most `ms`. */
async function eventually(ok: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await Bun.sleep(2);
  }
}

describe('LeaseRenewals', () => {
  test('one timer renews every member while there is one, and stops at its first tick without one', async () => {
    const renewals = new LeaseRenewals(5);
    const counts = [0, 0];
    const a = { renew: () => void counts[0]!++ };
    const b = { renew: () => void counts[1]!++ };
    expect(renewals.armed).toBe(false);
    renewals.add(a);
    renewals.add(b);
    expect(renewals.armed).toBe(true);
    await eventually(() => counts[0]! >= 2 && counts[1]! >= 2);
    renewals.remove(a);
    expect(renewals.armed).toBe(true);
    const before = counts[0]!;
    await eventually(() => counts[1]! >= before + 3);
    expect(counts[0]).toBe(before);
    renewals.remove(b);
    const bRenewals = counts[1]!;
    expect(renewals.size).toBe(0);
    // Still armed: a member added before the next tick (the next request) needs no new timer.
    expect(renewals.armed).toBe(true);
    renewals.add(a);
    const was = counts[0]!;
    await eventually(() => counts[0]! > was);
    renewals.remove(a);
    await eventually(() => !renewals.armed);
    expect(counts[1]).toBe(bRenewals);
  });

  test('a member that throws does not stop the others', async () => {
    const renewals = new LeaseRenewals(5);
    let renewed = 0;
    const errors = console.error;
    console.error = () => {};
    const failing = {
      renew: () => {
        throw new Error('boom');
      },
    };
    const ok = { renew: () => void renewed++ };
    try {
      renewals.add(failing);
      renewals.add(ok);
      await eventually(() => renewed >= 2);
    } finally {
      console.error = errors;
      renewals.remove(failing);
      renewals.remove(ok);
    }
    await eventually(() => !renewals.armed);
  });
});

describe('RequestReservation lease renewal', () => {
  test('a running reservation is renewed on the shared timer, and leaves it when closed', async () => {
    const { ledger } = ledgerFixture();
    const extended: string[] = [];
    const extend = ledger.extend.bind(ledger);
    ledger.extend = (id: string, ms?: number) => {
      extended.push(id);
      return extend(id, ms);
    };
    const renewals = leaseRenewals(Math.floor(40 / 2));
    const reservation = new RequestReservation(ledger, 'r1', 40);
    reservation.take(pair, 10);
    expect(renewals.size).toBe(1);
    await eventually(() => extended.length >= 3);
    // Renewed past several lease lengths: the record is still the request's.
    expect(ledger.isActive('r1')).toBe(true);
    reservation.end({ kind: 'release' });
    reservation.close();
    expect(renewals.size).toBe(0);
    await eventually(() => !renewals.armed);
  });
});
