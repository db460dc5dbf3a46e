import { describe, expect, test } from 'bun:test';
import { Election } from './election.ts';
import { MemoryStore } from './memory.ts';
import { StoreError } from './store-error.ts';
import type { Claim, HeldKey, StoreLease } from './store.ts';

function changes(election: Election): boolean[] {
  const seen: boolean[] = [];
  election.onChange((leader) => seen.push(leader));
  return seen;
}

const silence = (): Promise<never> => Promise.reject(new StoreError('unreachable', undefined, 'no answer within 1000 ms'));

/**
 * A memory store of three members that can fall silent (every call unreachable) and tell its
 * listeners when it is back; `refusing` members refuse connections (their processes are down).
 */
class FlakyStore extends MemoryStore {
  down = false;
  refusing = 0;
  censuses = 0;
  /** Claims fail while set, as one call in three did with an etcd member down. */
  claimsFail = false;
  /** Keep-alives wait for this before answering (an etcd electing a leader). */
  hang: Promise<void> | undefined;
  /** Leases whose keep-alives never reach the store (their holder is cut off from it). */
  readonly cutOff = new Set<string>();
  readonly #connected = new Set<(connected: boolean) => void>();

  setDown(down: boolean): void {
    this.down = down;
    for (const listener of this.#connected) listener(!down);
  }

  override connected(): boolean {
    return !this.down;
  }

  /** The whole store stopped: every call unreachable, every member refusing. */
  stop(): void {
    this.down = true;
    this.refusing = 3;
  }

  census(): Promise<{ refused: number; members: number }> {
    this.censuses += 1;
    return Promise.resolve({ refused: this.refusing, members: 3 });
  }

  override onConnected(listener: (connected: boolean) => void): () => void {
    this.#connected.add(listener);
    return () => this.#connected.delete(listener);
  }

  override held(key: string): Promise<HeldKey | undefined> {
    return this.down ? silence() : super.held(key);
  }

  override claim(key: string, value: string, lease: StoreLease): Promise<Claim> {
    return this.down || this.claimsFail ? silence() : super.claim(key, value, lease);
  }

  override async grantLease(ttlSeconds: number): Promise<StoreLease> {
    if (this.down) return silence();
    const lease = await super.grantLease(ttlSeconds);
    return {
      id: lease.id,
      ttlSeconds,
      keepAlive: async () => {
        if (this.cutOff.has(lease.id)) await new Promise(() => {});
        if (this.hang !== undefined) await this.hang;
        return this.down ? silence() : lease.keepAlive();
      },
      revoke: () => lease.revoke(),
    };
  }
}

/** Moves a fake clock in steps no longer than the heartbeat, so the election sees a live process. */
async function advance(election: Election, clock: { now: number }, ms: number, stepMs = 100): Promise<void> {
  for (let left = ms; left > 0; left -= stepMs) {
    clock.now += Math.min(stepMs, left);
    await election.step();
  }
}

describe('Election', () => {
  test('one of two candidates leads; the other sees it as holder and takes over at once when it resigns', async () => {
    const store = new MemoryStore();
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 60 });
    const b = new Election({ store, key: 'lock', value: 'B', ttlSeconds: 60 });
    const bChanges = changes(b);
    await a.step();
    await b.step();
    expect(a.leader).toBe(true);
    expect(a.mayAct()).toBe(true);
    expect(b.leader).toBe(false);
    expect(b.holder).toBe('A');
    const took = Promise.withResolvers<void>();
    b.onChange((leader) => leader && took.resolve());
    b.start();
    await a.close();
    // The watch saw the key go: no waiting for the next step.
    await took.promise;
    expect(b.leader).toBe(true);
    expect(bChanges).toEqual([true]);
    await b.close();
    await store.close();
  });

  test('a silent store whose members listen: the holder stops acting one step before its lease could lapse and stands down when it could lapse', async () => {
    for (const holdWhileDisconnected of [false, true]) {
      const store = new FlakyStore();
      const clock = { now: 1_000_000 };
      const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => clock.now, holdWhileDisconnected });
      const seen = changes(a);
      await a.step();
      store.down = true;
      await advance(a, clock, 1400);
      expect(a.mayAct()).toBe(true);
      await advance(a, clock, 100); // 1500 ms: TTL minus one step
      expect(a.mayAct()).toBe(false);
      expect(a.leader).toBe(true);
      await advance(a, clock, 400); // 1900 ms
      expect(a.leader).toBe(true);
      await advance(a, clock, 100); // a TTL: the store may have let the lease lapse and given the key to another
      expect(a.leader).toBe(false);
      expect(seen).toEqual([true, false]);
      // The store was surveyed and found listening: nothing to ride out.
      expect(store.censuses).toBeGreaterThan(0);
      await a.close();
      await store.close();
    }
  });

  test('a store that is down (every member refuses): a controller keeps the title without acting for two TTLs, then stands down', async () => {
    const store = new FlakyStore();
    const clock = { now: 1_000_000 };
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => clock.now });
    const seen = changes(a);
    await a.step();
    expect(a.mayAct()).toBe(true);
    store.stop();
    await advance(a, clock, 1400);
    expect(a.mayAct()).toBe(true);
    await advance(a, clock, 100); // 1500 ms: TTL minus one step
    expect(a.mayAct()).toBe(false);
    expect(a.leader).toBe(true);
    await advance(a, clock, 2400); // 3900 ms
    expect(a.leader).toBe(true);
    await advance(a, clock, 100); // two TTLs
    expect(a.leader).toBe(false);
    expect(seen).toEqual([true, false]);
    await a.close();
    await store.close();
  });

  test('riding out: the store answers again within the lease and the holder acts again without a change of title', async () => {
    const store = new FlakyStore();
    const clock = { now: 1_000_000 };
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 60, now: () => clock.now });
    const seen = changes(a);
    await a.step();
    store.down = true;
    await advance(a, clock, 46_000, 400);
    expect(a.mayAct()).toBe(false);
    expect(a.leader).toBe(true);
    store.down = false;
    await a.step();
    expect(a.mayAct()).toBe(true);
    expect(seen).toEqual([true]);
    await a.close();
    await store.close();
  });

  test('a holder that was stopped past its proof stands down at the first look, even if the store had been silent', async () => {
    const store = new FlakyStore();
    const clock = { now: 1_000_000 };
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => clock.now });
    await a.step();
    store.down = true;
    await advance(a, clock, 300);
    // Stopped for 3 s (SIGSTOP): nothing ran, the lease lapsed, someone else may hold the key.
    clock.now += 3000;
    expect(a.leader).toBe(false);
    expect(a.mayAct()).toBe(false);
    await a.close();
    await store.close();
  });

  test('a holder stalled for less than a TTL keeps the title (its lease cannot have lapsed) and acts again once renewed', async () => {
    const store = new FlakyStore();
    const clock = { now: 1_000_000 };
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => clock.now });
    const seen = changes(a);
    await a.step();
    clock.now += 1800; // a stall (GC, an overloaded machine): no tick, no renewal
    expect(a.leader).toBe(true);
    expect(a.mayAct()).toBe(false);
    await a.step();
    expect(a.mayAct()).toBe(true);
    expect(seen).toEqual([true]);
    await a.close();
    await store.close();
  });

  test('renewals that get no answer (an etcd election, a partition) prove nothing: the holder keeps the title to the end of its proof, then takes it back once answered', async () => {
    const store = new FlakyStore();
    const clock = { now: 1_000_000 };
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => clock.now, holdWhileDisconnected: true });
    const seen = changes(a);
    await a.step();
    const answer = Promise.withResolvers<void>();
    store.hang = answer.promise;
    const pending = a.step();
    for (let t = 100; t <= 3000; t += 100) {
      clock.now += 100;
      void a.step(); // the heartbeat: this process runs and keeps sending
      expect(a.leader).toBe(t < 2000);
    }
    // etcd elected a leader, which gave every lease a whole TTL again: the key is still on A's lease.
    store.hang = undefined;
    answer.resolve();
    await pending;
    await a.step();
    expect(a.leader).toBe(true);
    expect(a.mayAct()).toBe(true);
    expect(seen).toEqual([true, false, true]);
    await a.close();
    await store.close();
  });

  test('cut off from a store that serves others: the master stands down when its lease could lapse, before another can take the key', async () => {
    const store = new FlakyStore();
    const clock = { now: 1_000_000 };
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => clock.now, holdWhileDisconnected: true });
    const b = new Election({ store, key: 'lock', value: 'B', ttlSeconds: 2, now: () => clock.now });
    await a.step();
    const lease = (await store.held('lock'))!.lease!;
    // A's renewals go nowhere (its link to etcd hangs); etcd itself, and B, carry on.
    store.cutOff.add(lease);
    for (let t = 100; t <= 4000; t += 100) {
      clock.now += 100;
      void a.step();
      // etcd lets the lease lapse a TTL after the last renewal it received: then B may take the key.
      if (t === 2000) await store.revokeLease(lease);
      await b.step();
      expect([a.leader, b.leader]).not.toEqual([true, true]);
    }
    expect(a.leader).toBe(false);
    expect(b.leader).toBe(true);
    await a.close();
    await b.close();
    await store.close();
  });

  test('two members of three refusing: the outage is ridden out only once the quorum has been lost for an election timeout; one of three is no outage', async () => {
    for (const refusing of [1, 2]) {
      const store = new FlakyStore();
      const clock = { now: 1_000_000 };
      const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => clock.now, holdWhileDisconnected: true });
      await a.step();
      store.down = true;
      store.refusing = refusing;
      await advance(a, clock, 10_000);
      // Two refusing: the store lost its quorum; the census runs from the first unanswered renewal
      // (500 ms), so the loss has lasted an election timeout (at most 1333 ms) before the proof ends.
      expect(a.leader).toBe(refusing === 2);
      await a.close();
      await store.close();
    }
  });

  test('a lease that disappears (revoked) while claims fail: the holder stands down, never leading on a lease with no key', async () => {
    const store = new FlakyStore();
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 60 });
    const b = new Election({ store, key: 'lock', value: 'B', ttlSeconds: 60 });
    await a.step();
    expect(a.leader).toBe(true);
    const held = await store.held('lock');
    // The lease goes (an operator revokes it, or it lapsed); the next claim fails.
    store.claimsFail = true;
    await (await store.grantLease(60)).revoke(); // an unrelated lease: grants still work
    await store.revokeLease(held!.lease!);
    await a.step();
    expect(a.leader).toBe(false);
    store.claimsFail = false;
    await b.step();
    expect(b.leader).toBe(true);
    await a.step();
    expect(a.leader).toBe(false);
    expect(a.holder).toBe('B');
    await a.close();
    await b.close();
    await store.close();
  });

  test('a watch that sees the key deleted or taken makes the holder stand down at once', async () => {
    const store = new MemoryStore();
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 60 });
    const up = Promise.withResolvers<void>();
    a.onChange((leader) => leader && up.resolve());
    a.start();
    await up.promise;
    const down = Promise.withResolvers<void>();
    a.onChange((leader) => !leader && down.resolve());
    await store.delete('lock');
    await down.promise;
    expect(a.leader).toBe(false);
    await a.close();
    await store.close();
  });

  test('a guarded write that finds the key not held: lost() stands down at once', async () => {
    const store = new MemoryStore();
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 60 });
    await a.step();
    expect(a.leaseId).toBeDefined();
    a.lost('a guarded write found the key not held');
    expect(a.leader).toBe(false);
    expect(a.leaseId).toBeUndefined();
    await a.close();
    await store.close();
  });

  test('holdWhileDisconnected keeps the title while the store stays silent, and yields once it sees another holder', async () => {
    const store = new FlakyStore();
    const clock = { now: 1_000_000 };
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => clock.now, holdWhileDisconnected: true });
    const seen = changes(a);
    await a.step();
    store.stop();
    await advance(a, clock, 10_000);
    expect(a.leader).toBe(true);
    expect(a.mayAct()).toBe(false);
    // Its lease lapses in the store; B takes the key once the store is back.
    store.down = false;
    store.refusing = 0;
    await store.revokeLease((await store.held('lock'))!.lease!);
    const b = new Election({ store, key: 'lock', value: 'B', ttlSeconds: 60 });
    await b.step();
    expect(b.leader).toBe(true);
    await a.step();
    expect(a.leader).toBe(false);
    expect(a.holder).toBe('B');
    expect(seen).toEqual([true, false]);
    await a.close();
    await b.close();
    await store.close();
  });

  test('a holder that stood down for a silent store takes the title back at once when the store returns with the key still on its lease', async () => {
    const store = new FlakyStore();
    const clock = { now: 1_000_000 };
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 60, now: () => clock.now });
    const seen = changes(a);
    await a.step();
    store.setDown(true);
    await advance(a, clock, 120_000, 400);
    expect(a.leader).toBe(false);
    const back = Promise.withResolvers<void>();
    a.onChange((leader) => leader && back.resolve());
    a.start();
    // Back: the listener campaigns without waiting for a step.
    store.setDown(false);
    await back.promise;
    expect(seen).toEqual([true, false, true]);
    await a.close();
    await store.close();
  });
});
