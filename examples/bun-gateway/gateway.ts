/**
 * A Bun inference gateway with pdlink mounted in it: the gateway keeps a route of its own
 * (`GET /gateway/health`), pdlink's management API is mounted under `/pd` (the Controller posts
 * its refreshes to `/pd/v1/instances/refresh`) and its OpenAI-compatible PD proxy at the root.
 *
 *   npm install pdlink hono
 *   PORT=8080 npx bun gateway.ts
 */
import { Hono } from 'hono';
import { createPdlink } from 'pdlink';

const pdlink = createPdlink();
const gateway = new Hono();
gateway.get('/gateway/health', (c) => c.json({ gateway: 'ok', instances: pdlink.registry.all().length }));
gateway.route('/pd', pdlink.managementApp);
gateway.route('/', pdlink.inferenceApp);

const server = Bun.serve({ hostname: '127.0.0.1', port: Number(process.env['PORT'] ?? 8080), fetch: gateway.fetch });
console.log(`gateway listening on http://127.0.0.1:${server.port}`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    // In-flight requests end first; then pdlink lets go of its pools and connections.
    void server
      .stop()
      .then(() => pdlink.close())
      .then(() => process.exit(0));
  });
}
