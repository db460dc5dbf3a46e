/**
 * Request ids end to end on a simulated cluster: the KV ledger keys each request by an id the
 * Coordinator makes, so clients that send the same `X-Request-Id` at once (by accident or to
 * disturb another client) all get their answer; the engines still see the client's id on both
 * legs, and `/v1/transfers` shows both ids of every record.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { legsWhen, proxyPost, settled, SimCluster } from './support/sim-cluster.ts';

const MODEL = 'e2e-ids';
let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({
    prefill: 1,
    decode: 1,
    devices: 1,
    model: MODEL,
    engine: { numBlocks: 4096, blockBytes: 1024, blockTokens: 16, decodeMsPerToken: 0, maxModelLen: 4096 },
  });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

test('40 concurrent requests with one X-Request-Id: all 200, the id on every leg, 40 ledger records under distinct keys', async () => {
  const id = 'shared-client-id';
  const count = 40;
  const responses = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      proxyPost(cluster, '/v1/completions', { model: MODEL, prompt: `request ${i} of many with one id`, max_tokens: 4 }, id),
    ),
  );
  const bodies = await Promise.all(responses.map((r) => r.text()));
  expect(responses.map((r) => r.status)).toEqual(Array.from({ length: count }, () => 200));
  expect(new Set(responses.map((r) => r.headers.get('x-request-id')))).toEqual(new Set([id]));
  expect(bodies.every((b) => (JSON.parse(b) as { choices: unknown[] }).choices.length === 1)).toBe(true);

  // The engines saw the client's id, unchanged, on every prefill and every decode leg.
  const records = await legsWhen(cluster, id, (rs) => rs.length === 2 * count && rs.every((r) => r.outcome !== 'running'));
  expect(records.filter((r) => r.leg === 'prefill')).toHaveLength(count);
  expect(records.filter((r) => r.leg === 'decode')).toHaveLength(count);
  expect(records.every((r) => r.status === 200)).toBe(true);

  await settled(cluster);
  const transfers = (await (await fetch(`${cluster.coordinatorUrl}/v1/transfers`)).json()) as {
    recent: { request_id: string; client_request_id: string | null; state: string }[];
  };
  const mine = transfers.recent.filter((r) => r.client_request_id === id);
  expect(mine).toHaveLength(count);
  expect(mine.every((r) => r.state === 'done')).toBe(true);
  expect(new Set(mine.map((r) => r.request_id)).size).toBe(count);
  expect(mine.some((r) => r.request_id === id)).toBe(false);
}, 60_000);
