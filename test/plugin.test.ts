import { afterEach, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Hono } from 'hono';
import { createPdlink, type Pdlink } from '../src/index.ts';
import { REPO_ROOT } from './support/child.ts';

const seedBody = readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'seed-refresh.json'), 'utf8');
const json = { 'content-type': 'application/json' };

let pdlink: Pdlink | undefined;
afterEach(async () => {
  await pdlink?.close();
  pdlink = undefined;
});

describe('pdlink mounted in another Hono app', () => {
  test('management routes answer under a prefix, the gateway keeps its own routes', async () => {
    pdlink = createPdlink();
    const gateway = new Hono();
    gateway.get('/own', (c) => c.text('gateway'));
    gateway.route('/pd', pdlink.managementApp);
    gateway.route('/', pdlink.inferenceApp);

    expect(await (await gateway.request('/own')).text()).toBe('gateway');
    expect((await gateway.request('/pd/v1/readiness')).status).toBe(503);
    const refreshed = await gateway.request('/pd/v1/instances/refresh', { method: 'POST', headers: json, body: seedBody });
    expect(refreshed.status).toBe(200);
    expect((await gateway.request('/pd/v1/readiness')).status).toBe(200);
    expect(
      pdlink.registry
        .all()
        .map((i) => i.id)
        .sort(),
    ).toEqual([0, 1]);
    expect(await (await gateway.request('/pd/metrics')).text()).toContain('pdlink_refresh_total');
  });

  test("errors keep pdlink's envelope under the prefix", async () => {
    pdlink = createPdlink();
    const gateway = new Hono();
    gateway.route('/pd', pdlink.managementApp);
    const res = await gateway.request('/pd/v1/instances/refresh', { method: 'POST', headers: json, body: '{' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; error_type: string };
    expect(body.error_type).toBe('BadRequest');
  });

  test('two instances in one process keep separate registries and metrics', async () => {
    const a = createPdlink();
    const b = createPdlink();
    try {
      await a.managementApp.request('/v1/instances/refresh', { method: 'POST', headers: json, body: seedBody });
      expect(a.registry.all()).toHaveLength(2);
      expect(b.registry.all()).toHaveLength(0);
      expect(a.metrics).not.toBe(b.metrics);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('the registry emits diffs a gateway can subscribe to', async () => {
    pdlink = createPdlink();
    const added: number[] = [];
    pdlink.registry.onChange((diff) => added.push(...diff.added.map((i) => i.id)));
    await pdlink.managementApp.request('/v1/instances/refresh', { method: 'POST', headers: json, body: seedBody });
    expect(added.sort()).toEqual([0, 1]);
  });
});
