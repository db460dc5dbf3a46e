/**
 * The election on a real three-member etcd, with both candidates in this process so that who holds
 * the title is read at the same instant (every 10 ms), and both running as master Coordinators do
 * (holding while the store is down):
 * - the holder cut off from every member (its connections hang, as across a partition) while the
 *   other candidate reaches them: it stands down before the other can take the key;
 * - etcd stopped entirely (every member refuses connections): the holder keeps its title throughout
 *   and nobody else takes it;
 * - two members of three killed: never two holders, and one again once they are back.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Election } from '../src/store/election.ts';
import { EtcdStore } from '../src/store/etcd.ts';
import { KEYS } from '../src/store/store.ts';
import { CutRelay } from './support/cut-relay.ts';
import { TestEtcd } from './support/etcd.ts';
import { when } from './support/ha-cluster.ts';

const TTL_SECONDS = 2;
const REPEAT = Number(process.env['HA_REPEAT'] ?? 2);

let etcd: TestEtcd;
let relays: CutRelay[];
let storeA: EtcdStore;
let storeB: EtcdStore;

/** Samples both candidates every 10 ms: every instant both held, and how often each held. */
class Sampler {
  readonly both: string[] = [];
  held = [0, 0];
  samples = 0;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(a: Election, b: Election) {
    this.#timer = setInterval(() => {
      const holds = [a.leader, b.leader];
      this.samples += 1;
      holds.forEach((h, i) => (this.held[i]! += h ? 1 : 0));
      if (holds[0] && holds[1]) this.both.push(new Date().toISOString());
    }, 10);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/**
 * A holds the title, B stands by; A reaches etcd through the relays (a relay accepts connections
 * whether or not its member runs, so only a direct A can see members refuse them).
 */
async function pair(aVia: 'relays' | 'direct'): Promise<{ a: Election; b: Election; sampler: Sampler; close(): Promise<void> }> {
  const options = { key: KEYS.coordinatorMaster, ttlSeconds: TTL_SECONDS, holdWhileDisconnected: true } as const;
  const a = new Election({ ...options, store: aVia === 'relays' ? storeA : storeB, value: 'A' });
  const b = new Election({ ...options, store: storeB, value: 'B' });
  a.start();
  await when(async () => a.mayAct(), 'A holds the title');
  b.start();
  await when(async () => b.holder === 'A', 'B sees A hold it');
  const sampler = new Sampler(a, b);
  return {
    a,
    b,
    sampler,
    close: async () => {
      sampler.stop();
      await a.close();
      await b.close();
    },
  };
}

beforeAll(async () => {
  etcd = await TestEtcd.start({ members: 3 });
  relays = await Promise.all(etcd.endpoints.map((endpoint) => CutRelay.start(endpoint)));
  storeA = new EtcdStore({ endpoints: relays.map((r) => r.endpoint), cluster: 'election' });
  storeB = new EtcdStore({ endpoints: etcd.endpoints, cluster: 'election' });
}, 120_000);
afterAll(async () => {
  await storeA?.close();
  await storeB?.close();
  await Promise.all((relays ?? []).map((r) => r.close()));
  await etcd?.destroy();
});

describe('one holder at any instant on a real three-member etcd', () => {
  for (let round = 1; round <= REPEAT; round++) {
    test(`round ${round}: the holder cut off from every member while the other reaches them stands down before the other takes the key`, async () => {
      const { a, b, sampler, close } = await pair('relays');
      try {
        for (const r of relays) r.cut();
        await when(async () => b.mayAct(), 'B takes the title');
        expect(a.leader).toBe(false);
        for (const r of relays) r.mend();
        await when(async () => a.holder === 'B', 'A, reconnected, sees B hold the title');
        expect(a.leader).toBe(false);
        expect(sampler.both).toEqual([]);
      } finally {
        for (const r of relays) r.mend();
        await close();
      }
    }, 60_000);
  }

  test('etcd stopped entirely for three TTLs: the holder keeps its title throughout, nobody else takes it; back, it acts again', async () => {
    const { a, b, sampler, close } = await pair('direct');
    try {
      await etcd.stop();
      const stoppedAt = Date.now();
      const before = sampler.samples;
      await when(async () => Date.now() - stoppedAt >= 3 * TTL_SECONDS * 1000, 'three TTLs of outage');
      const during = sampler.samples - before;
      expect(during).toBeGreaterThan(100);
      expect(sampler.held[0]).toBe(sampler.samples);
      await etcd.resume();
      await when(async () => a.mayAct(), 'A acts again');
      expect(sampler.held).toEqual([sampler.samples, 0]);
      expect(b.holder).toBe('A');
    } finally {
      if (!etcd.running) await etcd.resume();
      await close();
    }
  }, 60_000);

  test('two members of three killed for three TTLs: never two holders; back, exactly one', async () => {
    const { a, b, sampler, close } = await pair('direct');
    try {
      await etcd.members[0]!.stop();
      await etcd.members[1]!.stop();
      const stoppedAt = Date.now();
      await when(async () => Date.now() - stoppedAt >= 3 * TTL_SECONDS * 1000, 'three TTLs of outage');
      await etcd.resume();
      await when(async () => a.mayAct() !== b.mayAct(), 'exactly one acting holder');
      expect(sampler.both).toEqual([]);
    } finally {
      if (!etcd.members.every((m) => m.running)) await etcd.resume();
      await close();
    }
  }, 60_000);
});
