import { describe, expect, test } from 'bun:test';
import { Election } from './election.ts';
import { MemoryStore } from './memory.ts';
import type { StoreLease } from './store.ts';

function changes(election: Election): boolean[] {
  const seen: boolean[] = [];
  election.onChange((leader) => seen.push(leader));
  return seen;
}

/** A store whose lease calls can be made to fail, as if etcd were unreachable. */
class FlakyStore extends MemoryStore {
  down = false;
  override async grantLease(ttlSeconds: number): Promise<StoreLease> {
    if (this.down) throw new Error('unreachable');
    const lease = await super.grantLease(ttlSeconds);
    return {
      id: lease.id,
      keepAlive: () => (this.down ? Promise.reject(new Error('unreachable')) : lease.keepAlive()),
      createIfAbsent: (key, value) => (this.down ? Promise.reject(new Error('unreachable')) : lease.createIfAbsent(key, value)),
      revoke: () => lease.revoke(),
    };
  }
}

describe('Election', () => {
  test('one of two candidates leads; the other sees it as holder and takes over when it resigns', async () => {
    const store = new MemoryStore();
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 60 });
    const b = new Election({ store, key: 'lock', value: 'B', ttlSeconds: 60 });
    const bChanges = changes(b);
    await a.step();
    await b.step();
    expect(a.leader).toBe(true);
    expect(b.leader).toBe(false);
    expect(b.holder).toBe('A');
    b.start();
    await a.close();
    await b.step();
    expect(b.leader).toBe(true);
    expect(bChanges).toEqual([true]);
    await b.close();
    await store.close();
  });

  test('a leader that cannot renew steps down one step before its lease could lapse', async () => {
    const store = new FlakyStore();
    let now = 1_000_000;
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => now });
    const seen = changes(a);
    await a.step();
    expect(a.leader).toBe(true);
    store.down = true;
    now += 1000; // half the lease gone: still leading
    await a.step();
    expect(a.leader).toBe(true);
    now += 499; // just short of TTL minus one step (1500 ms)
    await a.step();
    expect(a.leader).toBe(true);
    now += 1;
    await a.step();
    expect(a.leader).toBe(false);
    expect(seen).toEqual([true, false]);
    await a.close();
    await store.close();
  });

  test('with holdWhileDisconnected the leader keeps the title while unreachable and takes it back when the key is free', async () => {
    const store = new FlakyStore();
    let now = 1_000_000;
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 2, now: () => now, holdWhileDisconnected: true });
    const seen = changes(a);
    await a.step();
    store.down = true;
    now += 10_000;
    await a.step();
    expect(a.leader).toBe(true);
    store.down = false;
    await a.step();
    expect(a.leader).toBe(true);
    expect(seen).toEqual([true]);
    await a.close();
    await store.close();
  });

  test('with holdWhileDisconnected the leader yields once it sees another holder', async () => {
    const store = new FlakyStore();
    const a = new Election({ store, key: 'lock', value: 'A', ttlSeconds: 0.2, holdWhileDisconnected: true });
    const seen = changes(a);
    await a.step();
    expect(a.leader).toBe(true);
    // Cut off, its lease lapses in the store and B takes the key.
    store.down = true;
    const lapsed = Promise.withResolvers<void>();
    store.watch('lock', (_key, value) => value === undefined && lapsed.resolve());
    await lapsed.promise;
    await a.step();
    expect(a.leader).toBe(true);
    store.down = false;
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
});
