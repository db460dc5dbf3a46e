import { describe, expect, test } from 'bun:test';
import { Counter } from 'prom-client';
import { createRegistry } from '../core/metrics.ts';
import { probeRoutes } from './probes.ts';

describe('probes', () => {
  test('liveness and startup answer 200 whatever readiness says', async () => {
    const app = probeRoutes({ notReadyReason: () => 'nothing registered', metrics: createRegistry() });
    for (const path of ['/v1/startup', '/v1/health', '/v2/health/live']) {
      expect((await app.request(path)).status).toBe(200);
    }
  });

  test('readiness is 503 with the reason, then 200 once the check passes', async () => {
    let reason: string | undefined = 'need one prefill and one decode';
    const app = probeRoutes({ notReadyReason: () => reason, metrics: createRegistry() });
    for (const path of ['/v1/readiness', '/v2/health/ready']) {
      const res = await app.request(path);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: 'need one prefill and one decode', error_type: 'NotReady' });
    }
    reason = undefined;
    for (const path of ['/v1/readiness', '/v2/health/ready']) expect((await app.request(path)).status).toBe(200);
  });

  test('/metrics serves the given registry in Prometheus text format', async () => {
    const metrics = createRegistry();
    new Counter({ name: 'pdlink_probe_test_total', help: 'test counter', registers: [metrics] }).inc(3);
    const res = await probeRoutes({ notReadyReason: () => undefined, metrics }).request('/metrics');
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toContain('pdlink_probe_test_total 3');
  });
});
