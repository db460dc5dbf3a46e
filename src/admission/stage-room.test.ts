import { describe, expect, test } from 'bun:test';
import { KvLedger } from '../ledger/index.ts';
import { TestCluster, type TestInstanceSpec } from '../../test/doubles/cluster.ts';
import type { StageLimits } from './settings.ts';
import { StageRoom } from './stage-room.ts';

const P = (spec: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({
  id: 0,
  role: 'prefill',
  availSlots: 10,
  availBlocks: 1000,
  ...spec,
});
const D = (spec: Partial<TestInstanceSpec> = {}): TestInstanceSpec => ({
  id: 1,
  role: 'decode',
  peers: [0],
  availSlots: 10,
  availBlocks: 1000,
  ...spec,
});

function fixture(specs: TestInstanceSpec[], limits: StageLimits = {}, maxPerInstance = 1000) {
  const cluster = new TestCluster(specs);
  const ledger = new KvLedger({ cluster });
  let more = 0;
  const room = new StageRoom(cluster, ledger, limits, maxPerInstance, () => more++);
  return { cluster, ledger, room, more: () => more };
}

let n = 0;
const reserve = (ledger: KvLedger, p: number, d: number, pBlocks = 1): string => {
  const requestId = `r${n++}`;
  ledger.reserve({ requestId, p, d, pBlocks, dBlocks: pBlocks, phase: 'prefilling' });
  return requestId;
};

describe('StageRoom', () => {
  test('room is reported free slots minus reservations, per stage', () => {
    const { ledger, room } = fixture([P({ availSlots: 3 }), D({ availSlots: 5 })]);
    expect([room.prefillRoom, room.decodeRoom]).toEqual([3, 5]);
    const id = reserve(ledger, 0, 1);
    expect([room.prefillRoom, room.decodeRoom]).toEqual([2, 4]);
    ledger.release(id, 'client_abort');
    expect([room.prefillRoom, room.decodeRoom]).toEqual([3, 5]);
    expect(ledger.totals().reservedSlots).toBe(0);
  });

  test('a decode-bound cluster: D full while P is idle refuses new prefills', () => {
    const { ledger, room } = fixture([P(), D()], { decodeInFlight: 2 });
    const held = [reserve(ledger, 0, 1), reserve(ledger, 0, 1)];
    // P answered both: P has nothing in flight, D still decodes both.
    for (const id of held) ledger.begin(id, 'transferring');
    expect(room.loads().prefill).toMatchObject({ inFlight: 0 });
    expect(room.prefillRoom).toBeGreaterThan(0);
    expect(room.decodeRoom).toBe(0);
    expect(room.fits(true)).toBe(false);
    expect(room.fits(false)).toBe(false);
    for (const id of held) ledger.complete(id);
    expect(room.fits(true)).toBe(true);
    expect(ledger.totals().reservedSlots).toBe(0);
  });

  test('prefill limits: in-flight prefills and queued prompt tokens per P', () => {
    const { ledger, room, more } = fixture([P({ blockSize: 16 }), D()], { prefillInFlight: 2, prefillQueuedTokens: 100 });
    const a = reserve(ledger, 0, 1, 2);
    expect(room.prefillRoom).toBe(1);
    const b = reserve(ledger, 0, 1, 5); // 7 blocks of 16 = 112 tokens ≥ 100
    expect(room.prefillRoom).toBe(0);
    const before = more();
    ledger.begin(b, 'transferring');
    // b left P: one prefill, 32 tokens queued.
    expect(room.prefillRoom).toBe(1);
    expect(more()).toBeGreaterThan(before);
    ledger.complete(a);
    ledger.complete(b);
    expect(room.loads()).toMatchObject({ prefill: { inFlight: 0 }, decode: { inFlight: 0 } });
  });

  test('a request D prefills itself counts against D only', () => {
    const { ledger, room } = fixture([P(), D()], { prefillInFlight: 1, decodeInFlight: 1 });
    const local = reserve(ledger, 1, 1);
    expect(room.prefillRoom).toBe(1);
    expect(room.decodeRoom).toBe(0);
    expect(room.loads().prefill.inFlight).toBe(0);
    ledger.complete(local);
    expect(room.decodeRoom).toBe(1);
  });

  test('KV usage limit on D, and an instance without free blocks has no room', () => {
    const { ledger, room, cluster } = fixture([P(), D({ totalBlocks: 100, availBlocks: 100 })], { decodeKvUsage: 0.5 });
    const id = reserve(ledger, 0, 1, 49);
    expect(room.decodeRoom).toBeGreaterThan(0);
    const more = reserve(ledger, 0, 1, 1);
    expect(room.decodeRoom).toBe(0);
    ledger.release(id, 'client_abort');
    ledger.release(more, 'client_abort');
    cluster.patch(P({ availBlocks: 0, totalBlocks: 1000 }));
    expect(room.prefillRoom).toBe(0);
  });

  test('the per-instance request cap counts as the scheduler counts it', () => {
    const { ledger, room } = fixture([P(), D()], {}, 1);
    const id = reserve(ledger, 0, 1);
    expect([room.prefillRoom, room.decodeRoom]).toEqual([0, 0]);
    ledger.complete(id);
    expect([room.prefillRoom, room.decodeRoom]).toEqual([1, 1]);
  });

  test('refreshes: new instances add room, removed ones take theirs (and their records) away', () => {
    const { ledger, room, cluster, more } = fixture([P(), D()]);
    reserve(ledger, 0, 1);
    cluster.refresh([P(), D(), D({ id: 2, availSlots: 4 })]);
    expect(room.decodeRoom).toBe(9 + 4);
    expect(more()).toBeGreaterThan(0);
    cluster.remove(1);
    expect(room.decodeRoom).toBe(4);
    expect(room.servable(true)).toBe(true);
    cluster.remove(0);
    expect(room.servable(true)).toBe(false);
    expect(room.servable(false)).toBe(true);
    expect(room.prefillRoom).toBe(0);
    expect(ledger.totals().reservedSlots).toBe(0);
  });

  test('a decode side that moves takes its count along', () => {
    const { ledger, room } = fixture([P(), D(), D({ id: 2 })], { decodeInFlight: 1 });
    const id = reserve(ledger, 0, 1);
    expect(room.decodeRoom).toBe(1);
    // A decode side moves only once P has answered (the ledger's proof that P holds the blocks).
    ledger.begin(id, 'transferring');
    ledger.moveDecode(id, 2, 1);
    expect(room.loads().decode.inFlight).toBe(1);
    expect(room.decodeRoom).toBe(1);
    ledger.complete(id);
    expect(room.decodeRoom).toBe(2);
    room.close();
  });
});
