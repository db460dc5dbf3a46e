/**
 * Two Coordinators, one truth: each subscribes to every engine the topology names (refresh entries
 * carrying `kv_events_endpoint`), so both score the same request the same without talking to each
 * other, and a publisher's restart or removal moves both alike. The engines are real libzmq
 * publishers (test/support/zmq-peer.ts).
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { createCoordinator, type Coordinator } from '../src/apps/coordinator.ts';
import { until } from '../src/sim/cluster/process.ts';
import { ZmqPeer } from './support/zmq-peer.ts';

const BS = 4;
const peers: ZmqPeer[] = [];
const coordinators: Coordinator[] = [];
afterEach(async () => {
  await Promise.all(coordinators.splice(0).map((c) => c.close()));
  peers.splice(0).forEach((p) => p.stop());
});

function instance(id: number, role: 'P' | 'D', peer?: ZmqPeer, peerIds: number[] = []): Record<string, unknown> {
  return {
    id,
    ip: '127.0.0.1',
    port: String(20000 + id),
    metric_port: String(21000 + id),
    model_name: 'm',
    static_info: {
      group_id: 0,
      max_seq_len: 4096,
      max_output_len: 512,
      total_slots_num: 100,
      total_block_num: 1000,
      block_size: BS,
      label: role === 'P' ? 2 : 3,
      role: role === 'P' ? 80 : 68,
    },
    dynamic_info: { avail_slots_num: 100, avail_block_num: 1000, ...(role === 'D' ? { peers: peerIds } : {}) },
    ...(peer === undefined ? {} : { kv_events_endpoint: peer.pubEndpoint, kv_events_replay_endpoint: peer.replayEndpoint }),
  };
}

async function refresh(c: Coordinator, instances: Record<string, unknown>[]): Promise<void> {
  const res = await c.managementFetch(
    new Request('http://c/v1/instances/refresh', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ids: instances.map((i) => i['id']), instances }),
    }),
  );
  expect(res.status).toBe(200);
}

const block = (b: number): number[] => Array.from({ length: BS }, (_, i) => b * 10 + i);
const prompt = (blocks: number): number[] => Array.from({ length: blocks }, (_, b) => block(b)).flat();

describe('two Coordinators on the same engines', () => {
  test('score the same request the same, from the events alone', async () => {
    const [p1, p2] = await Promise.all([ZmqPeer.start(), ZmqPeer.start()]);
    peers.push(p1!, p2!);
    const snapshot = [instance(1, 'P', p1), instance(2, 'P', p2), instance(3, 'P'), instance(10, 'D', undefined, [1, 2, 3])];
    for (let i = 0; i < 2; i++)
      coordinators.push(createCoordinator({ policy: { prefill: 'precise_prefix', decode: 'load_balance' }, maxRequestsPerInstance: 100 }));
    // Each P's publisher sees one subscription per Coordinator.
    const subscribed = [p1!, p2!].flatMap((p) => [p.nextEvent('subscribed'), p.nextEvent('subscribed')]);
    for (const c of coordinators) await refresh(c, snapshot);
    await Promise.all(subscribed);
    expect(coordinators.map((c) => [...c.kv.publishers('topology')].length)).toEqual([2, 2]);

    await p1!.vllm({ events: [['stored', [0, 1], null, prompt(2), BS]] });
    await p2!.vllm({ events: [['stored', [0, 1, 2], null, prompt(3), BS]] });
    await until(
      async () => (coordinators.every((c) => c.kv.state.index.held === 5) ? true : undefined),
      10_000,
      () => 'both Coordinators applied both publishers',
    );
    const picks = coordinators.map((c) => {
      const pick = c.scheduler.pick({ promptTokens: prompt(4) });
      return pick.ok ? [pick.p.id, pick.reason, pick.matchedBlocks] : pick.reason;
    });
    expect(picks).toEqual([
      [2, 'cache_hit', 3],
      [2, 'cache_hit', 3],
    ]);

    // P2's engine restarts (its sequence goes back): both drop what it held, and move to P1.
    await p2!.command({ op: 'restart' });
    await p2!.vllm({ events: [['cleared']] });
    await until(
      async () => (coordinators.every((c) => c.kv.state.index.held === 2) ? true : undefined),
      10_000,
      () => 'both Coordinators reset P2',
    );
    expect(coordinators.map((c) => (c.scheduler.pick({ promptTokens: prompt(4) }) as { p: { id: number } }).p.id)).toEqual([1, 1]);

    // P1 leaves the topology: both unsubscribe and forget it.
    for (const c of coordinators) await refresh(c, [instance(2, 'P', p2), instance(3, 'P'), instance(10, 'D', undefined, [2, 3])]);
    expect(coordinators.map((c) => [[...c.kv.publishers()].length, c.kv.state.index.held])).toEqual([
      [1, 0],
      [1, 0],
    ]);
  });

  test('a refresh entry with a bad endpoint is refused naming the field: nothing is registered or subscribed', async () => {
    const c = createCoordinator({ policy: { prefill: 'precise_prefix', decode: 'load_balance' } });
    coordinators.push(c);
    const bad = { ...instance(1, 'P'), kv_events_endpoint: 'udp://x' };
    const instances: Record<string, unknown>[] = [bad, instance(10, 'D', undefined, [1])];
    const res = await c.managementFetch(
      new Request('http://c/v1/instances/refresh', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ids: instances.map((i) => i['id']), instances }),
      }),
    );
    expect(res.status).toBe(400);
    const body = (await res.json()) as { issues: { path: string; message: string }[] };
    expect(body.issues.map((i) => i.path)).toEqual(['instances[0].kv_events_endpoint']);
    expect([...c.kv.publishers()]).toEqual([]);
    expect(c.scheduler.pick({ promptTokens: prompt(2) }).ok).toBe(false);
  });
});
