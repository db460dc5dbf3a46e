/**
 * The etcd store against a real etcd: the same contract as the memory store, an election between
 * two clients, the connected state through an outage (etcd killed, then started again); errors that
 * come from an etcd that answered (too large, out of space) named by key and never counted as a
 * disconnection; a three-member etcd with one member down answering every call; the history
 * compacted.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createRegistry } from '../src/core/metrics.ts';
import { Election } from '../src/store/election.ts';
import { EtcdStore } from '../src/store/etcd.ts';
import { storeMetrics } from '../src/store/metrics.ts';
import { StoreError } from '../src/store/store-error.ts';
import { TestEtcd } from './support/etcd.ts';
import { until } from './support/sim-cluster.ts';

let etcd: TestEtcd;
beforeAll(async () => {
  etcd = await TestEtcd.start();
});
afterAll(async () => {
  await etcd.destroy();
});

async function rejection(promise: Promise<unknown>): Promise<StoreError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof StoreError) return err;
    throw err;
  }
  throw new Error('resolved');
}

describe('EtcdStore', () => {
  test('keys live under /pdlink/<cluster>/; get, put, list, delete and watch', async () => {
    const store = new EtcdStore({ endpoints: [etcd.endpoint], cluster: 'kv' });
    const other = new EtcdStore({ endpoints: [etcd.endpoint], cluster: 'other' });
    const seen: [string, string | undefined][] = [];
    const stop = store.watch('controller/', (key, value) => seen.push([key, value]));
    // A watch is live once it reports a put made after it; keep writing until one arrives.
    await until(
      async () => {
        await store.put('controller/probe', 'p');
        return seen.length > 0 ? true : undefined;
      },
      10_000,
      () => 'watch never reported',
    );
    await store.put('controller/desired', 'a');
    await other.put('controller/desired', 'other cluster');
    expect(await store.get('controller/desired')).toBe('a');
    expect(await other.get('controller/desired')).toBe('other cluster');
    expect((await store.list('controller/')).get('controller/desired')).toBe('a');
    await store.delete('controller/desired');
    expect(await store.get('controller/desired')).toBeUndefined();
    await until(
      async () => (seen.some(([k, v]) => k === 'controller/desired' && v === undefined) ? true : undefined),
      10_000,
      () => JSON.stringify(seen),
    );
    expect(seen.some(([k, v]) => k === 'controller/desired' && v === 'a')).toBe(true);
    expect(store.connected()).toBe(true);
    stop();
    await store.close();
    await other.close();
  });

  test('claim, held and a commit guarded by a key bound to a lease; a revoked lease frees the key and fails the guard', async () => {
    const store = new EtcdStore({ endpoints: [etcd.endpoint], cluster: 'guard' });
    const a = await store.grantLease(5);
    const b = await store.grantLease(5);
    expect(await store.claim('leader', 'A', a)).toMatchObject({ created: true, holder: { value: 'A', lease: a.id } });
    expect(await store.claim('leader', 'B', b)).toMatchObject({ created: false, holder: { value: 'A', lease: a.id } });
    expect(await store.held('leader')).toEqual({ value: 'A', lease: a.id });
    expect(await store.commit({ key: 'leader', lease: a.id }, new Map([['state', '1']]), [])).toBe(true);
    expect(await store.commit({ key: 'leader', lease: b.id }, new Map([['state', '2']]), [])).toBe(false);
    await etcd.revokeLease(a.id);
    expect(await a.keepAlive()).toBe(false);
    expect(await store.held('leader')).toBeUndefined();
    expect(await store.commit({ key: 'leader', lease: a.id }, new Map([['state', '3']]), [])).toBe(false);
    expect(await store.get('state')).toBe('1');
    await store.close();
  });

  test('two candidates: one leads; when it resigns the other takes over', async () => {
    const a = new EtcdStore({ endpoints: [etcd.endpoint], cluster: 'elect' });
    const b = new EtcdStore({ endpoints: [etcd.endpoint], cluster: 'elect' });
    const ea = new Election({ store: a, key: 'lock', value: 'A', ttlSeconds: 2 });
    const eb = new Election({ store: b, key: 'lock', value: 'B', ttlSeconds: 2 });
    await ea.step();
    await eb.step();
    expect(ea.leader).toBe(true);
    expect(eb.leader).toBe(false);
    expect(eb.holder).toBe('A');
    eb.start();
    await ea.close();
    await until(
      async () => (eb.leader ? true : undefined),
      10_000,
      () => 'B never led',
    );
    expect(await b.get('lock')).toBe('B');
    await eb.close();
    await a.close();
    await b.close();
  });

  test('a value past etcd\'s request limit: an error naming the key, "too_large", and the store still connected', async () => {
    const store = new EtcdStore({ endpoints: [etcd.endpoint], cluster: 'large' });
    const error = await rejection(store.put('controller/big', 'x'.repeat(2_000_000)));
    expect(error.reason).toBe('too_large');
    expect(error.message).toStartWith('controller/big: ');
    expect(store.connected()).toBe(true);
    expect(store.health().errors.too_large).toBe(1);
    await store.close();
  });

  test('etcd killed: connected goes false, calls fail without crashing; started again: connected comes back by itself', async () => {
    const store = new EtcdStore({ endpoints: [etcd.endpoint], cluster: 'outage' });
    await store.put('k', 'v');
    const changes: boolean[] = [];
    store.onConnected((c) => changes.push(c));
    await etcd.stop();
    await until(
      async () => (store.connected() ? undefined : true),
      10_000,
      () => 'still connected',
    );
    expect((await rejection(store.get('k'))).reason).toBe('unreachable');
    await etcd.resume();
    await until(
      async () => (store.connected() ? true : undefined),
      20_000,
      () => 'never reconnected',
    );
    expect(await store.get('k')).toBe('v');
    expect(changes).toEqual([false, true]);
    await store.close();
  });
});

describe('EtcdStore at its limits', () => {
  test('etcd out of space: the write fails naming its key ("no_space"), pdlink_store_no_space is 1, the store stays connected, deletes still pass', async () => {
    const small = await TestEtcd.start({ quotaBytes: 4 * 1024 * 1024 });
    const store = new EtcdStore({ endpoints: small.endpoints, cluster: 'full' });
    const metrics = createRegistry();
    storeMetrics(metrics, store);
    let error: StoreError | undefined;
    for (let i = 0; i < 20 && error === undefined; i++) {
      error = await store.put(`controller/state/b${i}`, 'x'.repeat(1_000_000)).then(
        () => undefined,
        (err: unknown) => err as StoreError,
      );
    }
    expect(error?.reason).toBe('no_space');
    expect(error?.message).toMatch(/^controller\/state\/b\d+: etcd is out of space \(NOSPACE\)/);
    expect(store.connected()).toBe(true);
    const text = await metrics.metrics();
    expect(text).toContain('pdlink_store_no_space{store="etcd"} 1');
    expect(text).toContain('pdlink_store_connected{store="etcd"} 1');
    expect(text).toContain('pdlink_store_errors_total{store="etcd",reason="no_space"} 1');
    expect(await store.commit(undefined, new Map(), ['controller/state/b0'])).toBe(true);
    await store.close();
    await small.destroy();
  }, 60_000);

  test('three members, one down: every call of every kind still succeeds and the store never reads disconnected', async () => {
    const three = await TestEtcd.start({ members: 3 });
    const store = new EtcdStore({ endpoints: three.endpoints, cluster: 'three' });
    const changes: boolean[] = [];
    await until(
      async () => (store.connected() ? true : undefined),
      10_000,
      () => 'never connected',
    );
    store.onConnected((c) => changes.push(c));
    const leader = (await three.leaderIndex())!;
    for (const down of [(leader + 1) % 3, leader]) {
      await three.members[down]!.stop();
      // The leader's loss is an etcd election: calls wait it out (each tries another member meanwhile).
      await three.healthy();
      const lease = await store.grantLease(5);
      await store.claim(`lock-${down}`, 'me', lease);
      for (let i = 0; i < 100; i++) {
        await store.put('k', String(i));
        expect(await store.get('k')).toBe(String(i));
        expect(await lease.keepAlive()).toBe(true);
        expect(await store.commit({ key: `lock-${down}`, lease: lease.id }, new Map([['s', String(i)]]), [])).toBe(true);
      }
      await three.resumeMember(down);
    }
    expect(changes).toEqual([]);
    expect(store.health().errors.unreachable).toBe(0);
    await store.close();
    await three.destroy();
  }, 120_000);

  test('history older than the compaction period is compacted', async () => {
    const store = new EtcdStore({ endpoints: [etcd.endpoint], cluster: 'compact', compactionSeconds: 1 });
    await store.put('k', 'first');
    const first = await etcd.members[0]!.gateway('/v3/kv/range', { key: Buffer.from('/pdlink/compact/k').toString('base64') });
    const revision = Number((first!['kvs'] as { mod_revision: string }[])[0]!.mod_revision);
    for (let i = 0; i < 5; i++) await store.put('k', `later ${i}`);
    await until(
      async () => {
        const old = await etcd.members[0]!.gateway('/v3/kv/range', {
          key: Buffer.from('/pdlink/compact/k').toString('base64'),
          revision,
        });
        // etcd answers a read of a compacted revision with an error (no body here).
        return old === undefined ? true : undefined;
      },
      10_000,
      () => `revision ${revision} still readable`,
    );
    expect(await store.get('k')).toBe('later 4');
    await store.close();
  }, 30_000);
});
