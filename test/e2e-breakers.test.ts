/**
 * End to end on a simulated cluster (one prefill and two decode `pdlink sim-engine` processes):
 * decode instances die and come back as in production. d0 is killed (its connections are refused:
 * each request offered to it is served by d1, and d0's circuit opens), restarted and registered
 * again with the very same snapshot; it must get traffic at once, and when d1 is killed in turn
 * the requests keep succeeding on d0 — no window of 503s.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { E2E_DEADLINE_MS, legsWhen, proxyPost, settled, SimCluster, until } from './support/sim-cluster.ts';

const MODEL = 'e2e-breakers';
const PROMPT = 'An instance that comes back must be used again. '.repeat(2);
let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 1,
    decode: 2,
    model: MODEL,
    coordinatorConfig: { proxy_config: { backoff_base_ms: 1, backoff_cap_ms: 5 } },
  });
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

/** The value of one sample of the Coordinator's /metrics (0 when absent). */
async function metric(sample: string): Promise<number> {
  const text = await (await fetch(`${cluster.coordinatorUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? 0 : Number(line.slice(sample.length + 1));
}

/** `pdlink_circuit_state` of one instance: 0 closed, 1 half-open, 2 open. */
function circuit(id: number): Promise<number> {
  return metric(`pdlink_circuit_state{instance="${id}"}`);
}

/** Sends one completion and returns its status and the engine whose decode leg served it. */
async function complete(id: string): Promise<{ status: number; decodedBy: string | undefined }> {
  const res = await proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: PROMPT, max_tokens: 4 }, id);
  const status = res.status;
  await res.arrayBuffer();
  if (status !== 200) return { status, decodedBy: undefined };
  const records = await legsWhen(cluster, id, (rs) => rs.some((r) => r.leg === 'decode' && r.status === 200));
  return { status, decodedBy: records.find((r) => r.leg === 'decode' && r.status === 200)?.engine };
}

describe('kill d0, restart it, same snapshot, kill d1', () => {
  test('no request fails, and the restarted d0 gets traffic as soon as it is registered again', async () => {
    const d0 = cluster.engine('d0');
    await d0.process.stop('SIGKILL');

    // d0 refuses connections: every request it is offered goes to d1, until its circuit opens.
    let sent = 0;
    await until(
      async () => {
        const { status, decodedBy } = await complete(`dead-d0-${sent++}`);
        expect(status).toBe(200);
        expect(decodedBy).toBe('d1');
        return (await circuit(d0.id)) === 2 ? true : undefined;
      },
      E2E_DEADLINE_MS,
      () => `d0's circuit did not open after ${sent} requests`,
    );

    // Restarted, linked, RoleReady, and the Controller pushes the same snapshot again.
    await cluster.restart('d0');
    // The first request after the refresh is d0's trial (equal loads go to the lower id, d0).
    expect(await complete('back-0')).toEqual({ status: 200, decodedBy: 'd0' });
    expect(await complete('back-1')).toEqual({ status: 200, decodedBy: 'd0' });
    expect(await circuit(d0.id)).toBe(0);

    const refusedBefore = await metric('pdlink_pd_decode_retries_total{reason="refused"}');
    await cluster.engine('d1').process.stop('SIGKILL');
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => complete(`after-d1-${round}-${i}`)));
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
      expect(new Set(results.map((r) => r.decodedBy))).toEqual(new Set(['d0']));
    }
    // Concurrent requests load d0, so some were offered to the dead d1 first and went on to d0.
    expect(await metric('pdlink_pd_decode_retries_total{reason="refused"}')).toBeGreaterThan(refusedBefore);
    await cluster.restart('d1');
    await settled(cluster);
  }, 120_000);
});
