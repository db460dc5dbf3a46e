import { describe, expect, test } from 'bun:test';
import { MANIFEST, readChunked } from '../store/chunked.ts';
import { MemoryStore } from '../store/memory.ts';
import { StoreError, type StoreErrorReason } from '../store/store-error.ts';
import { KEYS, LEGACY_KEYS, type Guard } from '../store/store.ts';
import { StateKeeper } from './state-keeper.ts';

/** A memory store that counts transactions and can refuse writes as etcd would (out of space: deletes still pass). */
class CountingStore extends MemoryStore {
  commits = 0;
  refuse: StoreErrorReason | undefined;

  override async commit(guard: Guard | undefined, puts: ReadonlyMap<string, string>, deletes: readonly string[]): Promise<boolean> {
    this.commits += 1;
    if (this.refuse !== undefined && (puts.size > 0 || this.refuse !== 'no_space')) {
      throw new StoreError(this.refuse, puts.keys().next().value, 'etcdserver: mvcc: database space exceeded');
    }
    return super.commit(guard, puts, deletes);
  }
}

async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`never: ${what}`);
}

async function setup(records: Map<number, string>) {
  const store = new CountingStore();
  const lease = await store.grantLease(60);
  await store.claim(KEYS.controllerLeader, 'me', lease);
  const lines: string[] = [];
  const failed: StoreErrorReason[] = [];
  let written = 0;
  let lost: string | undefined;
  const keeper = new StateKeeper({
    store,
    guard: () => ({ key: KEYS.controllerLeader, lease: lease.id }),
    lost: (reason) => (lost = reason),
    source: () => ({ records, meta: { generation: 1 } }),
    log: (line) => lines.push(line),
    events: { written: () => (written += 1), failed: (reason) => failed.push(reason) },
    minIntervalMs: 0,
  });
  keeper.start();
  return { store, lease, keeper, lines, failed, written: () => written, lost: () => lost };
}

const manifest = KEYS.controllerState + MANIFEST;

describe('StateKeeper', () => {
  test('writes the state once, then nothing while nothing changes; a change writes again; legacy whole-cluster keys go', async () => {
    const records = new Map([
      [1, '{"id":1}'],
      [2, '{"id":2}'],
    ]);
    const k = await setup(records);
    for (const key of LEGACY_KEYS) await k.store.put(key, 'x'.repeat(10));
    k.keeper.request();
    await eventually(() => k.written() === 1, 'first write');
    for (let i = 0; i < 5; i++) {
      k.keeper.request();
      await k.keeper.idle();
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(k.written()).toBe(1);
    for (const key of LEGACY_KEYS) expect(await k.store.get(key)).toBeUndefined();
    records.set(3, '{"id":3}');
    k.keeper.request();
    await eventually(() => k.written() === 2, 'second write');
    const read = await readChunked(await k.store.list(KEYS.controllerState), KEYS.controllerState);
    expect(read.ok && read.records.map((r) => (r as { id: number }).id).sort()).toEqual([1, 2, 3]);
    k.keeper.stop();
  });

  test('a refused write (out of space) is counted, logged with its key and reason, invalidates the stored state, and is retried until it succeeds', async () => {
    const records = new Map([[1, '{"id":1}']]);
    const k = await setup(records);
    k.keeper.request();
    await eventually(() => k.written() === 1, 'first write');
    k.store.refuse = 'no_space';
    records.set(2, '{"id":2}');
    k.keeper.request();
    await eventually(() => k.failed.length > 0, 'a failure');
    expect(k.failed[0]).toBe('no_space');
    expect(k.lines.some((l) => l.includes('cannot write the stored state (no_space): controller/state/'))).toBe(true);
    // Never started from: a state a failed write left stale is gone.
    await eventually(async () => (await k.store.get(manifest)) === undefined, 'the manifest deleted');
    expect(k.lines).toContain('stored state invalidated until the next write succeeds');
    k.store.refuse = undefined;
    await eventually(() => k.written() === 2, 'the retry');
    const read = await readChunked(await k.store.list(KEYS.controllerState), KEYS.controllerState);
    expect(read.ok && read.records.length).toBe(2);
    k.keeper.stop();
  });

  test('a write whose guard does not hold (another holder) changes nothing and says the title is lost', async () => {
    const k = await setup(new Map([[1, '{"id":1}']]));
    await k.lease.revoke();
    k.keeper.request();
    await eventually(() => k.lost() !== undefined, 'lost');
    expect(await k.store.get(manifest)).toBeUndefined();
    expect(k.written()).toBe(0);
  });
});
