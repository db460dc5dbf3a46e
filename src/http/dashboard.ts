/**
 * Routes of the topology page on a management app: the page and its bundled assets (built from
 * ui/ at install time, so nothing is fetched from the internet), the current state as JSON, and
 * the live state over SSE. Mounted on the management app so whatever guards management routes
 * guards this page too.
 */
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { errors } from '../core/errors.ts';
import type { DashboardFeed } from './dashboard-feed.ts';
import { platform } from '../platform/index.ts';
import { onError } from './envelope.ts';

/** Where `scripts/build-ui.mjs` writes the bundle. */
export const UI_DIST = new URL('../../ui/dist/', import.meta.url);

/** The only files served, with their types: no path from the request reaches the file system. */
const ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/**
 * Routes `/dashboard`, `/dashboard/state`, `/dashboard/events` (SSE) and `/dashboard/{app.js,app.css}`.
 * @example app.route('/', dashboardRoutes(new DashboardFeed(source)));
 */
export function dashboardRoutes(feed: DashboardFeed, dist: URL = UI_DIST): Hono {
  const app = new Hono();
  app.onError(onError);
  app.get('/dashboard', () => asset(dist, 'index.html', 'text/html; charset=utf-8'));
  app.get('/dashboard/state', (c) => c.json(feed.state()));
  app.get('/dashboard/events', (c) =>
    streamSSE(c, async (stream) => {
      const closed = Promise.withResolvers<void>();
      stream.onAbort(() => closed.resolve());
      const off = feed.subscribe((_, json) => {
        void stream.writeSSE({ event: 'state', data: json }).catch(() => closed.resolve());
      });
      await closed.promise;
      off();
    }),
  );
  // One static route per file, not a `/dashboard/:asset` parameter: a parameter beside the static
  // `/dashboard/state` and `/dashboard/events` keeps Hono from its RegExpRouter, and the management
  // app it is mounted on would route every request (refreshes included) with the slower TrieRouter.
  for (const [name, type] of Object.entries(ASSETS)) app.get(`/dashboard/${name}`, () => asset(dist, name, type));
  return app;
}

async function asset(dist: URL, name: string, type: string): Promise<Response> {
  const response = await platform.fileResponse(new URL(name, dist), { 'content-type': type, 'cache-control': 'no-cache' });
  if (response === undefined)
    throw errors.notReady(`the dashboard is not built (${name} missing): run \`npm install\` or \`node scripts/build-ui.mjs\``);
  return response;
}
