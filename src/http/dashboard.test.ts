import { afterAll, describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DashboardFeed } from './dashboard-feed.ts';
import type { DashboardSource } from './dashboard-state.ts';
import { dashboardRoutes } from './dashboard.ts';

const dir = mkdtempSync(join(tmpdir(), 'pdlink-dashboard-'));
writeFileSync(join(dir, 'index.html'), '<!doctype html><title>pdlink</title>');
writeFileSync(join(dir, 'app.js'), 'console.log(1)');
const dist = pathToFileURL(`${dir}/`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const source: DashboardSource = {
  kind: 'controller',
  topology: () => ({ instances: [], links: [{ p: 0, d: 1, state: 'ok', code: null }] }),
  counters: () => ({}),
  failures: () => [],
  watch: () => () => {},
};

describe('dashboardRoutes', () => {
  test('serves the page and its bundled assets with their types', async () => {
    const feed = new DashboardFeed(source);
    const app = dashboardRoutes(feed, dist);
    const page = await app.request('/dashboard');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('<title>pdlink</title>');
    const js = await app.request('/dashboard/app.js');
    expect(js.headers.get('content-type')).toContain('text/javascript');
    feed.close();
  });

  test('a name outside the bundle is 404 and never reaches the file system; a missing bundle says how to build it', async () => {
    const feed = new DashboardFeed(source);
    const app = dashboardRoutes(feed, dist);
    for (const path of ['/dashboard/index.ts', '/dashboard/..%2Fpackage.json', '/dashboard/app.js.map']) {
      const res = await app.request(path);
      expect(res.status).toBe(404);
    }
    const css = await app.request('/dashboard/app.css');
    expect(css.status).toBe(503);
    expect(((await css.json()) as { error: string }).error).toContain('npm install');
    feed.close();
  });

  test("its routes are all static paths, so an app they are mounted on keeps Hono's RegExpRouter", async () => {
    const feed = new DashboardFeed(source);
    const app = new Hono();
    app.get('/v1/instances/:id', (c) => c.text(c.req.param('id')));
    app.route('/', dashboardRoutes(feed, dist));
    expect(await (await app.request('/v1/instances/7')).text()).toBe('7');
    expect((await app.request('/dashboard/app.js')).status).toBe(200);
    expect((app.router as { activeRouter?: { name: string } }).activeRouter?.name).toBe('RegExpRouter');
    feed.close();
  });

  test('/dashboard/state answers the state; /dashboard/events streams it as SSE at once', async () => {
    const feed = new DashboardFeed(source);
    const app = dashboardRoutes(feed, dist);
    const state = (await (await app.request('/dashboard/state')).json()) as { source: string; links: unknown[] };
    expect(state.source).toBe('controller');
    expect(state.links).toEqual([{ p: 0, d: 1, state: 'ok', code: null }]);

    const abort = new AbortController();
    const res = await app.request('/dashboard/events', { signal: abort.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toStartWith('event: state\ndata: {');
    const data = JSON.parse(text.split('\n')[1]!.slice('data: '.length)) as { links: unknown[] };
    expect(data.links).toEqual(state.links);
    abort.abort();
    await reader.cancel();
    feed.close();
  });
});
