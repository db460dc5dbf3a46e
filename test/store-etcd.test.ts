/**
 * The etcd store against a real etcd: the same contract as the memory store, an election between
 * two clients, and the connected state through an outage (etcd killed, then started again).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Election } from '../src/store/election.ts';
import { EtcdStore } from '../src/store/etcd.ts';
import { TestEtcd } from './support/etcd.ts';
import { until } from './support/sim-cluster.ts';

let etcd: TestEtcd;
beforeAll(async () => {
  etcd = await TestEtcd.start();
});
afterAll(async () => {
  await etcd.destroy();
});

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
    await expect(store.get('k')).rejects.toThrow();
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
