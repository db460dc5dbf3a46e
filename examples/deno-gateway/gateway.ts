/**
 * A Deno inference gateway with pdlink mounted in it, installed from npm: the gateway keeps a route
 * of its own (`GET /gateway/health`), pdlink's management API is mounted under `/pd` (the
 * Controller posts its refreshes to `/pd/v1/instances/refresh`) and its OpenAI-compatible PD proxy
 * at the root.
 *
 *   npm install pdlink hono
 *   PORT=8080 npx deno run -A gateway.ts
 */
import { Hono } from 'npm:hono';
import { createPdlink } from 'npm:pdlink';

const pdlink = createPdlink();
const gateway = new Hono();
gateway.get('/gateway/health', (c) => c.json({ gateway: 'ok', instances: pdlink.registry.all().length }));
gateway.route('/pd', pdlink.managementApp);
gateway.route('/', pdlink.inferenceApp);

const server = Deno.serve(
  {
    hostname: '127.0.0.1',
    port: Number(Deno.env.get('PORT') ?? 8080),
    onListen: ({ port }) => console.log(`gateway listening on http://127.0.0.1:${port}`),
  },
  gateway.fetch,
);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  Deno.addSignalListener(signal, () => {
    // In-flight requests end first; then pdlink lets go of its pools and connections.
    void server
      .shutdown()
      .then(() => pdlink.close())
      .then(() => Deno.exit(0));
  });
}
