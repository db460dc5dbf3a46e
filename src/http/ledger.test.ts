import { expect, test } from 'bun:test';
import { TestCluster } from '../../test/doubles/cluster.ts';
import { ManualClock } from '../core/lease-clock.ts';
import { KvLedger } from '../ledger/ledger.ts';
import { ledgerRoutes } from './ledger.ts';

function setup() {
  const cluster = new TestCluster();
  const clock = new ManualClock(1_700_000_000_000.4);
  const ledger = new KvLedger({ cluster, clock });
  return { cluster, clock, ledger, app: ledgerRoutes({ ledger, cluster }) };
}

function twoInstances(cluster: TestCluster): void {
  cluster.refresh([
    { id: 5, role: 'decode', availSlots: 4, availBlocks: 100 },
    { id: 2, role: 'prefill', availSlots: 4, availBlocks: 100 },
  ]);
}

test('coordinator_info is 503 with the envelope before the first refresh', async () => {
  const { app } = setup();
  const res = await app.request('/v1/coordinator_info');
  expect(res.status).toBe(503);
  expect(await res.json()).toEqual({ error: 'no instance refresh has been received yet', error_type: 'NotReady' });
});

test('coordinator_info reports allocations per instance, by id, in MindIE shape', async () => {
  const { app, cluster, ledger } = setup();
  twoInstances(cluster);
  ledger.reserve({ requestId: 'r1', p: 2, d: 5, pBlocks: 10, dBlocks: 12 });
  ledger.reserve({ requestId: 'r2', p: 2, d: 5, slots: 2, pBlocks: 3, dBlocks: 3 });
  const res = await app.request('/v1/coordinator_info');
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({
    schedule_info: [
      { id: 2, allocated_slots: 3, allocated_blocks: 13 },
      { id: 5, allocated_slots: 3, allocated_blocks: 15 },
    ],
    request_num: 2,
    request_length_info: { input_len: 0, output_len: 0 },
  });
});

test('coordinator_info takes request counters from the supplied source', async () => {
  const cluster = new TestCluster();
  const ledger = new KvLedger({ cluster, clock: new ManualClock() });
  const app = ledgerRoutes({ ledger, cluster, requestStats: () => ({ requestNum: 7, inputLen: 512, outputLen: 128 }) });
  cluster.refresh([]);
  const body = await (await app.request('/v1/coordinator_info')).json();
  expect(body).toEqual({ schedule_info: [], request_num: 7, request_length_info: { input_len: 512, output_len: 128 } });
});

test("coordinator_info carries pdlink's request totals when the source has them", async () => {
  const cluster = new TestCluster();
  const ledger = new KvLedger({ cluster, clock: new ManualClock() });
  const totals = { requests: 3, promptTokens: 3000, outputTokens: 96 };
  const app = ledgerRoutes({ ledger, cluster, requestStats: () => ({ requestNum: 1, inputLen: 1000, outputLen: 32, totals }) });
  cluster.refresh([]);
  expect(await (await app.request('/v1/coordinator_info')).json()).toEqual({
    schedule_info: [],
    request_num: 1,
    request_length_info: { input_len: 1000, output_len: 32 },
    requests_total: 3,
    input_tokens_total: 3000,
    output_tokens_total: 96,
  });
});

test('transfers lists active and recent records with wire names, and the totals', async () => {
  const { app, cluster, ledger, clock } = setup();
  twoInstances(cluster);
  ledger.reserve({ requestId: 'live', p: 2, d: 5, pBlocks: 4, dBlocks: 4 });
  ledger.reserve({ requestId: 'moved', p: 2, d: 5, pBlocks: 8, dBlocks: 8 });
  ledger.begin('moved', 'transferring');
  clock.advance(10);
  ledger.complete('moved', { bytes: 4096, blocks: 8 });
  const res = await app.request('/v1/transfers');
  expect(res.status).toBe(200);
  const body = (await res.json()) as { active: Record<string, unknown>[]; recent: Record<string, unknown>[]; totals: unknown };
  expect(body.active).toEqual([
    {
      request_id: 'live',
      client_request_id: null,
      p: 2,
      d: 5,
      slots: 1,
      p_blocks: 4,
      d_blocks: 4,
      decode_held: true,
      state: 'reserved',
      code: null,
      detail: null,
      bytes: 0,
      blocks_moved: 0,
      lease_ms: 30_000,
      deadline: 1_700_000_030_000,
      reserved_at: 1_700_000_000_000,
      prefilling_at: null,
      transferring_at: null,
      ended_at: null,
    },
  ]);
  expect(body.recent).toHaveLength(1);
  expect(body.recent[0]).toMatchObject({ request_id: 'moved', state: 'done', bytes: 4096, blocks_moved: 8, ended_at: 1_700_000_000_010 });
  expect(body.totals).toEqual({
    active: 1,
    reserved_slots: 2,
    reserved_blocks: 8,
    bytes_moved: 4096,
    blocks_moved: 8,
    done: 1,
    failed: 0,
    expired: 0,
    released: 0,
  });
});

test('transfers answers before any refresh, with an empty ledger', async () => {
  const { app } = setup();
  const body = await (await app.request('/v1/transfers')).json();
  expect(body).toMatchObject({ active: [], recent: [], totals: { active: 0, reserved_blocks: 0 } });
});

test('a failure inside a route renders the envelope, not a bare 500 page', async () => {
  const { app, cluster } = setup();
  twoInstances(cluster);
  const broken = ledgerRoutes({
    ledger: new KvLedger({ cluster, clock: new ManualClock() }),
    cluster,
    requestStats: () => {
      throw new Error('stats source broke');
    },
  });
  const originalError = console.error;
  console.error = () => {};
  try {
    const res = await broken.request('/v1/coordinator_info');
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: 'internal error', error_type: 'InternalError' });
  } finally {
    console.error = originalError;
  }
  expect((await app.request('/v1/coordinator_info')).status).toBe(200);
});

test("transfers shows both ids of a request: the ledger key and the client's X-Request-Id", async () => {
  const { app, cluster, ledger } = setup();
  twoInstances(cluster);
  ledger.reserve({ requestId: 'coordinator-1', clientRequestId: 'client-7', p: 2, d: 5, pBlocks: 1, dBlocks: 1 });
  ledger.reserve({ requestId: 'coordinator-2', clientRequestId: 'client-7', p: 2, d: 5, pBlocks: 1, dBlocks: 1 });
  const body = (await (await app.request('/v1/transfers')).json()) as { active: Record<string, unknown>[] };
  expect(body.active.map((r) => [r.request_id, r.client_request_id])).toEqual([
    ['coordinator-1', 'client-7'],
    ['coordinator-2', 'client-7'],
  ]);
});
