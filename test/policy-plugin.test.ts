/**
 * A gateway adds a scheduling policy of its own: defined outside src/ against the plugin entry point
 * (test/fixtures/policies/highest-id.ts), registered with `registerPolicy`, named in the plugin's
 * options, and every completion the mounted plugin proxies goes where that policy says, with its
 * reason counted in the metrics. The same on Deno: test/deno/policy-plugin.deno.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Hono } from 'hono';
import { createPdlink, policyNames, registerPolicy, type Pdlink } from '../src/index.ts';
import { refreshBody } from '../src/sim/cluster/cluster-bodies.ts';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { highestId } from './fixtures/policies/highest-id.ts';

let cluster: SimCluster;
let pdlink: Pdlink | undefined;

beforeAll(async () => {
  cluster = await SimCluster.start({ prefill: 2, decode: 2 });
}, 120_000);

afterAll(async () => {
  await pdlink?.close();
  await cluster?.stop();
});

function refresh(): string {
  const entries = cluster.engines.map((engine) => ({
    engine,
    inferencePort: Number(new URL(engine.inferenceUrl).port),
    managementPort: Number(new URL(engine.manageUrl).port),
  }));
  return JSON.stringify(refreshBody(entries, cluster.model, cluster.settings));
}

describe('a policy registered from outside pdlink', () => {
  test('is in the table for its roles, once; a name taken by another definition is refused', () => {
    registerPolicy(highestId);
    registerPolicy(highestId);
    expect(policyNames('prefill')).toContain('highest_id');
    expect(policyNames('decode')).toContain('highest_id');
    expect(() => registerPolicy({ ...highestId })).toThrow('a policy named highest_id is registered already');
    expect(() => registerPolicy({ ...highestId, name: 'Highest' })).toThrow('name: must be 1 to 64 lowercase letters');
    expect(() => registerPolicy({ ...highestId, name: 'other_roles', roles: [] })).toThrow('roles: must list prefill, decode or both');
  });

  test('an unknown name, or a policy named for a role it does not serve, is refused naming the option', () => {
    expect(() => createPdlink({ policy: { prefill: 'nowhere' } })).toThrow('policy.prefill: must be one of');
    expect(() => createPdlink({ policy: { decode: 'cache_affinity' } })).toThrow('policy.decode: cache_affinity applies to prefill only');
  });

  test('routes every completion of a mounted plugin where it says, and its reason is counted', async () => {
    registerPolicy(highestId);
    pdlink = createPdlink({ policy: { prefill: 'highest_id', decode: 'highest_id' } });
    const gateway = new Hono();
    gateway.route('/pd', pdlink.managementApp);
    gateway.route('/', pdlink.inferenceApp);
    const refreshed = await gateway.request('/pd/v1/instances/refresh', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: refresh(),
    });
    expect(refreshed.status).toBe(200);

    const served: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await gateway.request('/v1/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: cluster.model, prompt: `request ${i} of a gateway's own policy`, max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
      await res.text();
      served.push(`${res.headers.get('x-pdlink-prefill')}/${res.headers.get('x-pdlink-decode')}`);
    }
    // The highest ids of the cluster: prefill 101, decode 201 (both decode instances list both P's).
    expect(served).toEqual(['101/201', '101/201', '101/201', '101/201']);
    const metrics = await (await gateway.request('/pd/metrics')).text();
    expect(metrics).toContain('pdlink_pd_pair_selections_total{policy="highest_id/highest_id",reason="highest_id"} 4');
  }, 60_000);
});
