import { describe, expect, test } from 'bun:test';
import { createControllerApp } from '../apps/controller.ts';
import { DEFAULT_TIMING } from '../controller/types.ts';
import { MemoryStore } from '../store/memory.ts';
import { KEYS } from '../store/store.ts';

const spec = {
  coordinators: [],
  timing: DEFAULT_TIMING,
  rates: { p: 0, d: 0 },
  instances: [
    {
      id: 1,
      manageUrl: 'http://10.0.0.1:2000',
      inferenceUrl: 'http://10.0.0.1:3000',
      modelName: 'm',
      serverIp: '10.0.0.1',
      devices: [{ logicalId: '0', ip: '10.0.0.1' }],
      role: 'prefill' as const,
      staticInfo: { maxSeqLen: 2048, maxOutputLen: 512, totalSlots: 8, totalBlocks: 64, blockSize: 16 },
    },
  ],
};

const entry = {
  id: 2,
  manage_url: 'http://10.0.0.2:2000',
  inference_url: 'http://10.0.0.2:3000',
  model_name: 'm',
  server_ip: '10.0.0.2',
  devices: [{ device_logical_id: '0', device_ip: '10.0.0.2' }],
  role: 'decode',
};

describe('controller API on a standby', () => {
  test('the embedded default leads alone: leadership shows it, changes are accepted', async () => {
    const app = createControllerApp({ spec });
    const view = (await (await app.managementApp.request('/v1/cluster')).json()) as { leadership: unknown };
    expect(view.leadership).toEqual({ state: 'leader', leader: null, store: 'memory', store_connected: true });
    const res = await app.managementApp.request('/v1/cluster/instances', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(entry),
    });
    expect(res.status).toBe(201);
    await app.close();
  });

  test('a standby answers scale-out and scale-in 503 naming the leader, and changes nothing', async () => {
    const store = new MemoryStore();
    // Another controller holds the leader key.
    const other = await store.grantLease(60);
    await store.claim(KEYS.controllerLeader, 'http://10.9.9.9:1030', other);
    const app = createControllerApp({ spec, ha: { store, ttlSeconds: 60 } });
    app.campaign('http://127.0.0.1:1030');
    let view: { leadership: { state: string; leader: string | null }; instances: { id: number }[] };
    for (;;) {
      view = (await (await app.managementApp.request('/v1/cluster')).json()) as typeof view;
      if (view.leadership.leader !== null) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(view.leadership).toMatchObject({ state: 'standby', leader: 'http://10.9.9.9:1030', store: 'memory' });

    const added = await app.managementApp.request('/v1/cluster/instances', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(entry),
    });
    expect(added.status).toBe(503);
    expect(await added.text()).toContain('http://10.9.9.9:1030');
    const removed = await app.managementApp.request('/v1/cluster/instances/1', { method: 'DELETE' });
    expect(removed.status).toBe(503);
    const after = (await (await app.managementApp.request('/v1/cluster')).json()) as typeof view;
    expect(after.instances.map((i) => i.id)).toEqual([1]);
    expect(after.instances.every((i) => (i as unknown as { state: string }).state !== 'draining')).toBe(true);
    await app.close();
  });
});
