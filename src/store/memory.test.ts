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

  test('claim under a lease: the second candidate sees the holder; revoking frees the key', async () => {
    const store = new MemoryStore();
    const a = await store.grantLease(10);
    const b = await store.grantLease(10);
    expect(await store.claim('k', 'A', a)).toMatchObject({ created: true, holder: { value: 'A', lease: a.id } });
    expect(await store.claim('k', 'B', b)).toMatchObject({ created: false, holder: { value: 'A', lease: a.id } });
    expect(await store.held('k')).toEqual({ value: 'A', lease: a.id });
    await a.revoke();
    expect(await store.get('k')).toBeUndefined();
    expect(await a.keepAlive()).toBe(false);
    expect(await store.claim('k', 'B', b)).toMatchObject({ created: true, holder: { value: 'B', lease: b.id } });
    await expect(store.claim('other', 'A', a)).rejects.toThrow(`lease ${a.id} not found`);
    await store.close();
  });

  test('a lease not renewed within its TTL expires and takes its keys', async () => {
    const store = new MemoryStore();
    const lease = await store.grantLease(0.05);
    await store.claim('k', 'v', lease);
    const gone = Promise.withResolvers<void>();
    store.watch('k', (_key, value) => value === undefined && gone.resolve());
    await gone.promise;
    expect(await store.get('k')).toBeUndefined();
    expect(await lease.keepAlive()).toBe(false);
    await store.close();
  });

  test('commit applies its puts and deletes only while the guard key is bound to the guard lease', async () => {
    const store = new MemoryStore();
    const lease = await store.grantLease(10);
    await store.claim('leader', 'A', lease);
    await store.put('old', 'x');
    expect(await store.commit({ key: 'leader', lease: lease.id }, new Map([['state', '1']]), ['old'])).toBe(true);
    expect(await store.get('state')).toBe('1');
    expect(await store.get('old')).toBeUndefined();
    expect(await store.commit({ key: 'leader', lease: 'another' }, new Map([['state', '2']]), [])).toBe(false);
    await lease.revoke();
    expect(await store.commit({ key: 'leader', lease: lease.id }, new Map([['state', '3']]), [])).toBe(false);
    expect(await store.get('state')).toBe('1');
    expect(await store.commit(undefined, new Map([['state', '4']]), [])).toBe(true);
    expect(await store.get('state')).toBe('4');
    await store.close();
  });

  test('watch events carry increasing revisions', async () => {
    const store = new MemoryStore();
    const revisions: number[] = [];
    store.watch('k', (_key, _value, revision) => revisions.push(revision));
    await store.put('k', '1');
    await store.delete('k');
    expect(revisions.length).toBe(2);
    expect(revisions[1]!).toBeGreaterThan(revisions[0]!);
    await store.close();
  });
});
