/**
 * A gateway's own scheduling policy on Deno: defined outside src/ (test/fixtures/policies/highest-id.ts),
 * registered through the plugin entry point, and every completion the mounted plugin proxies goes
 * where it says (the Bun side: test/policy-plugin.test.ts).
 */
import assert from 'node:assert/strict';
import { Hono } from 'hono';
import { createPdlink, registerPolicy } from '../../src/index.ts';
import { refreshBody } from '../../src/sim/cluster/cluster-bodies.ts';
import { highestId } from '../fixtures/policies/highest-id.ts';
import { denoCluster } from './support.ts';

Deno.test("a gateway's own policy routes the mounted plugin's completions on Deno", async () => {
  const cluster = await denoCluster({ prefill: 2, decode: 2 });
  registerPolicy(highestId);
  const pdlink = createPdlink({ policy: { prefill: 'highest_id', decode: 'highest_id' } });
  try {
    const gateway = new Hono();
    gateway.route('/pd', pdlink.managementApp);
    gateway.route('/', pdlink.inferenceApp);
    const entries = cluster.engines.map((engine) => ({
      engine,
      inferencePort: Number(new URL(engine.inferenceUrl).port),
      managementPort: Number(new URL(engine.manageUrl).port),
    }));
    const refreshed = await gateway.request('/pd/v1/instances/refresh', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(refreshBody(entries, cluster.model, cluster.settings)),
    });
    assert.equal(refreshed.status, 200);
    const served: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await gateway.request('/v1/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: cluster.model, prompt: `a Deno gateway's policy, request ${i}`, max_tokens: 2 }),
      });
      assert.equal(res.status, 200);
      await res.text();
      served.push(`${res.headers.get('x-pdlink-prefill')}/${res.headers.get('x-pdlink-decode')}`);
    }
    assert.deepEqual(served, ['101/201', '101/201', '101/201']);
  } finally {
    await pdlink.close();
    await cluster.stop();
  }
});
