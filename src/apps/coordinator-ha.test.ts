import { afterEach, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseRefresh } from '../schema/refresh.ts';
import { ChunkedWriter, MANIFEST } from '../store/chunked.ts';
import { MemoryStore } from '../store/memory.ts';
import { KEYS } from '../store/store.ts';
import { createCoordinator, type Coordinator } from './coordinator.ts';
import { CoordinatorHa } from './coordinator-ha.ts';

const seed = readFileSync(join(import.meta.dir, '..', '..', 'test', 'fixtures', 'seed-refresh.json'), 'utf8');

let coordinator: Coordinator | undefined;
let ha: CoordinatorHa | undefined;
afterEach(async () => {
  await ha?.close();
  await coordinator?.close();
  ha = undefined;
  coordinator = undefined;
});

/** Stores `body` as a leader controller would: one record per instance, in chunks under a manifest. */
async function storeSnapshot(store: MemoryStore, body: { instances: { id: number }[] }): Promise<void> {
  const records = new Map(body.instances.map((i) => [i.id, JSON.stringify({ id: i.id, snapshot: i })]));
  const write = (await new ChunkedWriter(KEYS.controllerState).prepare(records, { generation: 7 }))!;
  await store.commit(undefined, new Map([...write.parts, [KEYS.controllerState + MANIFEST, write.manifest]]), []);
}

function start(store: MemoryStore, mode: 'master_standby' | 'active_active'): { coordinator: Coordinator; ha: CoordinatorHa } {
  let made: CoordinatorHa | undefined;
  const c = createCoordinator({ notReadyReason: () => made?.notReadyReason() });
  made = new CoordinatorHa({ mode, store, registry: c.registry, metrics: c.metrics, ttlSeconds: 60 });
  coordinator = c;
  ha = made;
  return { coordinator: c, ha: made };
}

describe('CoordinatorHa', () => {
  test('a stored state that a failed write invalidated (no manifest) or that is incomplete is not started from', async () => {
    const store = new MemoryStore();
    await storeSnapshot(store, JSON.parse(seed));
    const parts = [...(await store.list(KEYS.controllerState)).keys()].filter((k) => !k.endsWith(MANIFEST));
    await store.delete(parts[0]!);
    const { coordinator: c, ha: h } = start(store, 'active_active');
    expect(await h.loadSnapshot()).toBe(false);
    await store.delete(KEYS.controllerState + MANIFEST);
    expect(await h.loadSnapshot()).toBe(false);
    expect(c.registry.generation).toBe(0);
  });

  test('a Coordinator that starts takes the stored snapshot at once and is ready on it', async () => {
    const store = new MemoryStore();
    await storeSnapshot(store, JSON.parse(seed));
    const { coordinator: c, ha: h } = start(store, 'active_active');
    expect((await c.managementApp.request('/v1/readiness')).status).toBe(503);
    expect(await h.loadSnapshot()).toBe(true);
    expect(c.registry.generation).toBe(1);
    expect((await c.managementApp.request('/v1/readiness')).status).toBe(200);
    expect(await c.metrics.metrics()).toContain('pdlink_store_connected{store="memory"} 1');
  });

  test('a snapshot pushed first wins over the stored one; a stored snapshot that does not validate is ignored', async () => {
    const store = new MemoryStore();
    await storeSnapshot(store, JSON.parse(seed));
    const { coordinator: c, ha: h } = start(store, 'active_active');
    c.registry.apply(parseRefresh({ ids: [], instances: [] }));
    expect(await h.loadSnapshot()).toBe(false);
    expect(c.registry.view().instances).toEqual([]);

    const other = new MemoryStore();
    await storeSnapshot(other, { instances: [{ id: 5, ip: 'not an address' } as unknown as { id: number }] });
    const fresh = createCoordinator();
    const second = new CoordinatorHa({
      mode: 'active_active',
      store: other,
      registry: fresh.registry,
      metrics: fresh.metrics,
      ttlSeconds: 60,
    });
    expect(await second.loadSnapshot()).toBe(false);
    expect(fresh.registry.generation).toBe(0);
    await second.close();
    await fresh.close();
  });

  test('master/standby: not ready before the election, the master is ready, a standby is 503 "not master" naming the master', async () => {
    const store = new MemoryStore();
    await storeSnapshot(store, JSON.parse(seed));
    const a = start(store, 'master_standby');
    await a.ha.loadSnapshot();
    const before = await a.coordinator.managementApp.request('/v1/readiness');
    expect(before.status).toBe(503);
    expect(await before.text()).toContain('not master');
    a.ha.campaign('http://10.0.0.1:1026');
    for (let i = 0; i < 100 && a.ha.master !== true; i++) await new Promise((resolve) => setImmediate(resolve));
    expect((await a.coordinator.managementApp.request('/v1/readiness')).status).toBe(200);

    const c2 = createCoordinator();
    const b = new CoordinatorHa({ mode: 'master_standby', store, registry: c2.registry, metrics: c2.metrics, ttlSeconds: 60 });
    const probe = createCoordinator({ notReadyReason: () => b.notReadyReason() });
    b.campaign('http://10.0.0.2:1026');
    for (let i = 0; i < 100 && !(b.notReadyReason() ?? '').includes('10.0.0.1'); i++) await new Promise((resolve) => setImmediate(resolve));
    const standby = await probe.managementApp.request('/v1/readiness');
    expect(standby.status).toBe(503);
    expect(await standby.text()).toContain('not master: the master Coordinator is http://10.0.0.1:1026');
    await b.close();
    await c2.close();
    await probe.close();
  });
});
