import { afterEach, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseRefresh } from '../schema/refresh.ts';
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

function start(store: MemoryStore, mode: 'master_standby' | 'active_active'): { coordinator: Coordinator; ha: CoordinatorHa } {
  let made: CoordinatorHa | undefined;
  const c = createCoordinator({ notReadyReason: () => made?.notReadyReason() });
  made = new CoordinatorHa({ mode, store, registry: c.registry, metrics: c.metrics, ttlSeconds: 60 });
  coordinator = c;
  ha = made;
  return { coordinator: c, ha: made };
}

describe('CoordinatorHa', () => {
  test('a Coordinator that starts takes the stored snapshot at once and is ready on it', async () => {
    const store = new MemoryStore();
    await store.put(KEYS.snapshot, JSON.stringify({ generation: 7, snapshot: JSON.parse(seed) }));
    const { coordinator: c, ha: h } = start(store, 'active_active');
    expect((await c.managementApp.request('/v1/readiness')).status).toBe(503);
    expect(await h.loadSnapshot()).toBe(true);
    expect(c.registry.generation).toBe(1);
    expect((await c.managementApp.request('/v1/readiness')).status).toBe(200);
    expect(await c.metrics.metrics()).toContain('pdlink_store_connected{store="memory"} 1');
  });

  test('a snapshot pushed first wins over the stored one; a stored snapshot that does not validate is ignored', async () => {
    const store = new MemoryStore();
    await store.put(KEYS.snapshot, JSON.stringify({ generation: 7, snapshot: JSON.parse(seed) }));
    const { coordinator: c, ha: h } = start(store, 'active_active');
    c.registry.apply(parseRefresh({ ids: [], instances: [] }));
    expect(await h.loadSnapshot()).toBe(false);
    expect(c.registry.view().instances).toEqual([]);

    const other = new MemoryStore();
    await other.put(KEYS.snapshot, JSON.stringify({ generation: 1, snapshot: { ids: 'nope' } }));
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
    await store.put(KEYS.snapshot, JSON.stringify({ generation: 7, snapshot: JSON.parse(seed) }));
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
