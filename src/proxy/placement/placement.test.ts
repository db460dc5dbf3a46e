import { describe, expect, test } from 'bun:test';
import type { Instance } from '../../cluster/instance.ts';
import { shortInstances, union } from './placement.ts';
import type { PickedPair, ReservationLedger } from '../exchange/ports.ts';

const instance = (id: number, blockSize = 16): Instance => ({ id, blockSize }) as Instance;
const pair = (p: Instance, d: Instance): PickedPair => ({ ok: true, p, d });

function ledgerWith(loads: Record<number, { availSlots: number; availBlocks: number }>): ReservationLedger {
  return { instanceLoad: (id: number) => loads[id] } as unknown as ReservationLedger;
}

describe('shortInstances', () => {
  test('names only the instance without room, counting blocks in its own block size', () => {
    const ledger = ledgerWith({ 1: { availSlots: 4, availBlocks: 10 }, 2: { availSlots: 4, availBlocks: 10 } });
    // 320 tokens: 20 blocks of 16 on P 1, 10 blocks of 32 on D 2.
    expect(shortInstances(pair(instance(1), instance(2, 32)), 320, ledger)).toEqual([1]);
    expect(shortInstances(pair(instance(1, 32), instance(2)), 320, ledger)).toEqual([2]);
  });

  test('an instance without a free slot or unknown to the ledger is short', () => {
    const ledger = ledgerWith({ 1: { availSlots: 0, availBlocks: 100 } });
    expect(shortInstances(pair(instance(1), instance(2)), 16, ledger)).toEqual([1, 2]);
  });

  test('both when the ledger cannot tell or finds both roomy; one id when P and D are one instance', () => {
    expect(shortInstances(pair(instance(1), instance(2)), 16, {} as ReservationLedger)).toEqual([1, 2]);
    const roomy = ledgerWith({ 1: { availSlots: 4, availBlocks: 100 }, 2: { availSlots: 4, availBlocks: 100 } });
    expect(shortInstances(pair(instance(1), instance(2)), 16, roomy)).toEqual([1, 2]);
    expect(shortInstances(pair(instance(3), instance(3)), 16, roomy)).toEqual([3]);
  });
});

describe('union', () => {
  test('adds without copying an empty side', () => {
    const a = new Set([1]);
    const none = new Set<number>();
    expect(union(a, none)).toBe(a);
    expect(union(none, a)).toBe(a);
    expect([...union(a, new Set([2]))]).toEqual([1, 2]);
  });
});
