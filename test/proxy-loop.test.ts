import { afterAll, expect, test } from 'bun:test';
import { createCoordinator } from '../src/apps/coordinator.ts';
import { seedExample } from './doubles/refresh-examples.ts';

const coordinator = createCoordinator();
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: coordinator.inferenceApp.fetch });
afterAll(async () => {
  server.stop(true);
  await coordinator.close();
});

test('an instance address that points back at the Coordinator is a 508 loop, not a request bouncing through itself', async () => {
  const snapshot = seedExample();
  for (const instance of snapshot.instances) {
    instance.ip = '127.0.0.1';
    instance.port = String(server.port);
  }
  const refreshed = await coordinator.managementApp.request('/v1/instances/refresh', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(snapshot),
  });
  expect(refreshed.status).toBe(200);

  const res = await fetch(`http://127.0.0.1:${server.port}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'loop-1' },
    body: JSON.stringify({ model: 'your_model_name', prompt: 'hello' }),
  });
  // The P leg came back with this proxy's own Via hop and was refused; no P answered, so the client
  // sees the leg's failure, and nothing stays reserved.
  expect(res.status).toBeGreaterThanOrEqual(500);
  const body = (await res.json()) as { error: { code: string; message: string } };
  expect(body.error.message).toContain('508');
  expect(body.error.message).toContain('points back at the Coordinator');
  expect(coordinator.ledger.snapshot().active).toHaveLength(0);
});
