import { describe, expect, test } from 'bun:test';
import { MemoryStore } from './memory.ts';

describe('MemoryStore', () => {
  test('get, put, delete and list under a prefix, with the cluster prefix shown', async () => {
    const store = new MemoryStore('east');
    expect(store.prefix).toBe('/pdlink/east/');
    expect(store.connected()).toBe(true);
    await store.put('controller/desired', 'a');
    await store.put('controller/assignments', 'b');
    await store.put('snapshot', 'c');
    expect(await store.get('controller/desired')).toBe('a');
    expect([...(await store.list('controller/')).keys()].sort()).toEqual(['controller/assignments', 'controller/desired']);
    await store.delete('controller/desired');
    expect(await store.get('controller/desired')).toBeUndefined();
    await store.close();
  });

  test('a watcher sees puts and deletes under its prefix only', async () => {
    const store = new MemoryStore();
    const seen: [string, string | undefined][] = [];
    const stop = store.watch('coordinator/', (key, value) => seen.push([key, value]));
    await store.put('coordinator/master_lock', 'x');
    await store.put('snapshot', 'ignored');
    await store.delete('coordinator/master_lock');
    stop();
    await store.put('coordinator/master_lock', 'after stop');
    expect(seen).toEqual([
      ['coordinator/master_lock', 'x'],
      ['coordinator/master_lock', undefined],
    ]);
    await store.close();
  });

  test('createIfAbsent under a lease: the second candidate sees the holder; revoking frees the key', async () => {
    const store = new MemoryStore();
    const a = await store.grantLease(10);
    const b = await store.grantLease(10);
    expect(await a.createIfAbsent('k', 'A')).toEqual({ created: true, holder: 'A' });
    expect(await b.createIfAbsent('k', 'B')).toEqual({ created: false, holder: 'A' });
    await a.revoke();
    expect(await store.get('k')).toBeUndefined();
    expect(await a.keepAlive()).toBe(false);
    expect(await b.createIfAbsent('k', 'B')).toEqual({ created: true, holder: 'B' });
    await store.close();
  });

  test('a lease not renewed within its TTL expires and takes its keys', async () => {
    const store = new MemoryStore();
    const lease = await store.grantLease(0.05);
    await lease.createIfAbsent('k', 'v');
    const gone = Promise.withResolvers<void>();
    store.watch('k', (_key, value) => value === undefined && gone.resolve());
    await gone.promise;
    expect(await store.get('k')).toBeUndefined();
    expect(await lease.keepAlive()).toBe(false);
    await store.close();
  });
});
