import { describe, expect, test } from 'bun:test';
import { ClusterRegistry } from '../cluster/registry.ts';
import { KvLedger, ManualClock } from '../ledger/index.ts';
import { exampleSnapshot } from '../../test/doubles/refresh-examples.ts';
import { parseRefresh } from '../schema/refresh.ts';
import { ledgerLoads } from './ledger-loads.ts';
import { createScheduler } from './scheduler.ts';
import type { Pair } from './types.ts';

/** Two groups of 16 (P 0–7 ↔ D 8–15, P 16–23 ↔ D 24–31), 200 slots and 1024 blocks each, all free. */
function setup() {
  const registry = new ClusterRegistry();
  registry.apply(parseRefresh(exampleSnapshot(32)));
  const clock = new ManualClock(0);
  const ledger = new KvLedger({ cluster: registry, clock });
  const scheduler = createScheduler({ cluster: registry, loads: ledgerLoads(ledger) });
  const pick = () => {
    const result = scheduler.pick({ promptBlocks: 100 }) as Pair;
    return [result.p.id, result.d.id];
  };
  return { registry, clock, ledger, scheduler, pick };
}

describe('ledgerLoads with the real registry and ledger', () => {
  test('a reservation moves the next pick to another pair; its release moves it back', () => {
    const { ledger, pick } = setup();
    expect(pick()).toEqual([0, 8]);
    ledger.reserve({ requestId: 'r1', p: 0, d: 8, pBlocks: 100, dBlocks: 100 });
    const [p, d] = pick();
    expect(p).not.toBe(0);
    expect(d).not.toBe(8);
    ledger.release('r1', 'client_abort');
    expect(pick()).toEqual([0, 8]);
  });

  test('the pair is always inside one group, P listed by D', () => {
    const { ledger, pick, registry } = setup();
    for (let i = 0; i < 40; i++) {
      const [p, d] = pick() as [number, number];
      const pi = registry.get(p)!;
      const di = registry.get(d)!;
      expect(pi.groupId).toBe(di.groupId);
      expect(di.peers).toContain(p);
      ledger.reserve({ requestId: `r${i}`, p, d, pBlocks: 100, dBlocks: 100 });
    }
    // 40 reservations of 100 blocks spread over 16 P's and 16 D's: no instance took more than 3.
    const most = Math.max(...ledger.snapshot().instances.map((i) => i.reservedBlocks));
    expect(most).toBeLessThanOrEqual(300);
  });

  test('an expired lease gives the capacity back to the scheduler', () => {
    const { ledger, clock, scheduler, pick } = setup();
    ledger.reserve({ requestId: 'held', p: 0, d: 8, pBlocks: 1000, dBlocks: 1000, leaseMs: 5_000 });
    expect(pick()).not.toEqual([0, 8]);
    clock.advance(5_000);
    expect(ledger.get('held')?.state).toBe('expired');
    expect(pick()).toEqual([0, 8]);
    expect(scheduler.counts().schedulablePrefill).toBe(16);
  });

  test('phase changes do not reach the scheduler; ends do', () => {
    const { ledger } = setup();
    const seen: number[] = [];
    const off = ledgerLoads(ledger).onLoadChange((id) => seen.push(id));
    ledger.reserve({ requestId: 'r', p: 0, d: 8, pBlocks: 1, dBlocks: 1 });
    ledger.begin('r', 'prefilling');
    ledger.begin('r', 'transferring');
    ledger.complete('r');
    off();
    ledger.reserve({ requestId: 's', p: 1, d: 9, pBlocks: 1, dBlocks: 1 });
    expect(seen).toEqual([0, 8, 0, 8]);
  });

  test('reported capacity from a refresh and reservations combine', () => {
    const { registry, ledger, scheduler } = setup();
    // Every P of group 0 reports 50 free slots except P3 (200); P3 is then the least loaded.
    const body = exampleSnapshot(32);
    for (const instance of body.instances) if (instance.id < 8 && instance.id !== 3) instance.dynamic_info.avail_slots_num = 50;
    registry.apply(parseRefresh(body));
    expect((scheduler.pick() as Pair).p.id).toBe(3);
    ledger.reserve({ requestId: 'a', p: 3, d: 8, slots: 160, pBlocks: 1, dBlocks: 1 });
    // P3 now has 40 free slots of 200; group 1's P16 (200 free) is the least loaded.
    expect((scheduler.pick() as Pair).p.id).toBe(16);
  });
});
