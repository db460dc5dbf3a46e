import { afterEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Hono } from 'hono';
import { createPdlink, type Pdlink } from '../src/index.ts';
import { refreshBody } from '../src/sim/cluster/cluster-bodies.ts';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { REPO_ROOT } from './support/child.ts';
import { blockAsModule, docBlock } from './support/docs.ts';

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

interface DocsGateway {
  readonly pdlink: Pdlink;
  readonly server: { readonly port: number };
  onShutdown(): Promise<void>;
}

describe('the Bun gateway of docs/plugin.md', () => {
  test('run as written (on a free loopback port, imports pointed at this checkout), it takes the refresh and proxies a completion', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pdlink-bun-gateway-'));
    const source = blockAsModule(
      docBlock('docs/plugin.md', 'bun-gateway'),
      ['pdlink', 'server'],
      [
        ["from 'pdlink'", `from '${pathToFileURL(join(REPO_ROOT, 'src', 'index.ts')).href}'`],
        ["from 'hono'", `from '${pathToFileURL(Bun.resolveSync('hono', import.meta.dir)).href}'`],
        ['port: 8080', "hostname: '127.0.0.1', port: 0"],
      ],
    );
    writeFileSync(join(dir, 'gateway.ts'), source);
    const cluster = await SimCluster.start({ prefill: 1, decode: 1 });
    const gateway = (await import(pathToFileURL(join(dir, 'gateway.ts')).href)) as DocsGateway;
    try {
      const base = `http://127.0.0.1:${gateway.server.port}`;
      expect((await fetch(`${base}/pd/v1/readiness`)).status).toBe(503);
      const entries = cluster.engines.map((engine) => ({
        engine,
        inferencePort: Number(new URL(engine.inferenceUrl).port),
        managementPort: Number(new URL(engine.manageUrl).port),
      }));
      const refreshed = await fetch(`${base}/pd/v1/instances/refresh`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify(refreshBody(entries, cluster.model, cluster.settings)),
      });
      expect({ status: refreshed.status, body: await refreshed.text() }).toEqual({ status: 200, body: '' });
      expect(
        gateway.pdlink.registry
          .all()
          .map((i) => i.id)
          .sort(),
      ).toEqual(cluster.engines.map((e) => e.id).sort());

      const res = await fetch(`${base}/v1/completions`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ model: cluster.model, prompt: 'a Bun gateway in front of PD', max_tokens: 4 }),
      });
      const answer = (await res.json()) as { choices?: { text: string }[] };
      expect(res.status).toBe(200);
      expect(answer.choices?.[0]?.text.length).toBeGreaterThan(0);
      expect([res.headers.get('x-pdlink-prefill'), res.headers.get('x-pdlink-decode')]).toEqual(cluster.engines.map((e) => String(e.id)));
    } finally {
      await gateway.onShutdown();
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
