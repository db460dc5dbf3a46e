import { afterEach, describe, expect, test } from 'bun:test';
import { DEFAULT_TIMING } from '../controller/types.ts';
import { createControllerApp, type ControllerApp } from './controller.ts';

const TOKEN = 'controller-token-0a1b2c3d';
let running: { app: ControllerApp; server: ReturnType<typeof Bun.serve> } | undefined;
afterEach(async () => {
  await running?.app.close();
  await running?.server.stop(true);
  running = undefined;
});

describe('controller with a management token', () => {
  test('its routes but the probes need the token, and every call it makes to agents and Coordinators carries it', async () => {
    const seen: { path: string; authorization: string | null }[] = [];
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(req) {
        seen.push({ path: new URL(req.url).pathname, authorization: req.headers.get('authorization') });
        return Response.json({});
      },
    });
    const base = `http://127.0.0.1:${server.port}`;
    const app = createControllerApp({
      managementToken: TOKEN,
      spec: {
        coordinators: [base],
        timing: DEFAULT_TIMING,
        rates: { p: 0, d: 0 },
        instances: [
          {
            id: 1,
            manageUrl: base,
            inferenceUrl: 'http://127.0.0.1:3000',
            modelName: 'm',
            serverIp: '127.0.0.1',
            devices: [{ logicalId: '0', ip: '127.0.0.1' }],
            role: 'prefill' as const,
            staticInfo: { maxSeqLen: 2048, maxOutputLen: 512, totalSlots: 8, totalBlocks: 64, blockSize: 16 },
          },
        ],
      },
    });
    running = { app, server };
    for (const headers of [{}, { authorization: 'Bearer wrong' }]) {
      expect((await app.managementApp.request('/v1/cluster', { headers })).status).toBe(401);
      expect((await app.managementApp.request('/dashboard', { headers })).status).toBe(401);
    }
    expect((await app.managementApp.request('/v1/health')).status).toBe(200);
    expect((await app.managementApp.request('/v1/cluster', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);

    app.controller.start();
    const deadline = Date.now() + 20_000;
    while (!seen.some((s) => s.path === '/v1/instances/refresh') || !seen.some((s) => s.path === '/v1/status')) {
      if (Date.now() > deadline) throw new Error(`controller calls not seen: ${JSON.stringify(seen)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(seen.length).toBeGreaterThan(0);
    for (const s of seen) expect(s.authorization).toBe(`Bearer ${TOKEN}`);
  });
});
