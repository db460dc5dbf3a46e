import { describe, expect, test } from 'bun:test';
import { Registry } from 'prom-client';
import { FakeExecutor } from '../../test/fixtures/links/fake-executor.ts';
import { LinkManager } from './manager.ts';
import { LLM_STATUS as S } from '../core/llm-status.ts';
import type { EndpointTarget, LinkEvent } from './types.ts';

const target = (id: number, port = 26000, endpoint?: string): EndpointTarget => ({
  remoteClusterId: BigInt(id),
  remote: { ip: '127.0.0.2', port },
  ...(endpoint === undefined ? {} : { endpoint }),
});

function setup(options: { endpoints?: string[]; maxBatch?: number; batchWindowMs?: number; now?: () => number } = {}) {
  const executor = new FakeExecutor();
  const registry = new Registry();
  const manager = new LinkManager({
    executor,
    endpoints: options.endpoints ?? ['0'],
    registry,
    batchWindowMs: options.batchWindowMs ?? 0,
    ...(options.maxBatch === undefined ? {} : { maxBatch: options.maxBatch }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const events: LinkEvent[] = [];
  manager.onChange((e) => events.push(e));
  return { executor, manager, events, registry };
}

describe('linkClusters / unlinkClusters', () => {
  test('link then unlink walks unlinked → linking → linked → unlinking → unlinked', async () => {
    const { manager, events } = setup();
    expect(await manager.linkClusters([target(1)])).toEqual({ ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    expect(manager.get('0', 1n)).toMatchObject({ state: 'linked', side: 'client', remote: { ip: '127.0.0.2', port: 26000 } });
    expect(await manager.unlinkClusters([target(1)])).toEqual({ ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    expect(manager.list()).toEqual([]);
    expect(events.map((e) => `${e.from}>${e.to}`)).toEqual([
      'unlinked>linking',
      'linking>linked',
      'linked>unlinking',
      'unlinking>unlinked',
    ]);
  });

  test('link twice → ALREADY_LINK; unlink unknown → NOT_YET_LINK', async () => {
    const { manager } = setup();
    await manager.linkClusters([target(1)]);
    expect(await manager.linkClusters([target(1)])).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_ALREADY_LINK] });
    expect(await manager.unlinkClusters([target(9)])).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_NOT_YET_LINK] });
  });

  test('idle() resolves at once with nothing in flight, and otherwise only after every call in flight has answered', async () => {
    const { manager, executor } = setup();
    await manager.idle();
    executor.hold();
    const lone = manager.linkClusters([target(1)]);
    const pair = manager.linkClusters([target(2), target(3)]);
    let idle = false;
    const waited = manager.idle().then(() => {
      idle = true;
    });
    // A call begun while idle() waits is waited for too.
    const late = manager.unlinkClusters([target(4)]);
    await Promise.resolve();
    expect(idle).toBe(false);
    executor.release();
    await waited;
    expect(idle).toBe(true);
    expect((await lone).ret).toBe(S.LLM_SUCCESS);
    expect((await pair).rets).toEqual([S.LLM_SUCCESS, S.LLM_SUCCESS]);
    expect((await late).rets).toEqual([S.LLM_NOT_YET_LINK]);
  });

  test('calls with many different timeouts each reach the runtime with their own timeout', async () => {
    const { manager, executor } = setup();
    for (let t = 1; t <= 40; t++) {
      expect((await manager.linkClusters([target(t)], { timeoutMs: 1000 + t })).ret).toBe(S.LLM_SUCCESS);
      expect((await manager.unlinkClusters([target(t)], { timeoutMs: 1000 + t, force: t % 2 === 0 })).ret).toBe(S.LLM_SUCCESS);
    }
    expect(executor.batches.map((b) => b.timeoutMs)).toEqual(Array.from({ length: 40 }, (_, i) => [1001 + i, 1001 + i]).flat());
    expect(executor.batches.filter((b) => b.op === 'unlink').map((b) => b.force)).toEqual(
      Array.from({ length: 40 }, (_, i) => (i + 1) % 2 === 0),
    );
  });

  test('17 clusters → CLUSTER_NUM_EXCEED_LIMIT for the call and every cluster, nothing sent', async () => {
    const { manager, executor } = setup();
    const many = Array.from({ length: 17 }, (_, i) => target(i));
    const result = await manager.linkClusters(many);
    expect(result.ret).toBe(S.LLM_CLUSTER_NUM_EXCEED_LIMIT);
    expect(result.rets).toEqual(new Array(17).fill(S.LLM_CLUSTER_NUM_EXCEED_LIMIT));
    expect((await manager.unlinkClusters(many)).ret).toBe(S.LLM_CLUSTER_NUM_EXCEED_LIMIT);
    expect(executor.batches).toEqual([]);
  });

  test('bad timeouts, empty calls and unknown endpoints → PARAM_INVALID', async () => {
    const { manager, executor } = setup();
    for (const timeoutMs of [0, -1, 1.5, 2 ** 31])
      expect((await manager.linkClusters([target(1)], { timeoutMs })).ret).toBe(S.LLM_PARAM_INVALID);
    expect(await manager.linkClusters([])).toEqual({ ret: S.LLM_PARAM_INVALID, rets: [] });
    expect(await manager.linkClusters([target(1, 26000, 'nope'), target(2)])).toEqual({
      ret: S.LLM_FAILED,
      rets: [S.LLM_PARAM_INVALID, S.LLM_SUCCESS],
    });
    expect(executor.batches.map((b) => b.ids)).toEqual([[2n]]);
  });

  test('a mixed batch answers per cluster in input order and records failures', async () => {
    const { manager, executor } = setup();
    executor.refuse.set(1, S.LLM_LINK_FAILED);
    await manager.linkClusters([target(2)]);
    const result = await manager.linkClusters([target(1, 1), target(2), target(3), target(4, 1)]);
    expect(result).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_LINK_FAILED, S.LLM_ALREADY_LINK, S.LLM_SUCCESS, S.LLM_LINK_FAILED] });
    expect(manager.get('0', 1n)).toMatchObject({ state: 'failed', code: S.LLM_LINK_FAILED });
    // A failed link can be tried again; the runtime decides.
    executor.refuse.clear();
    expect((await manager.linkClusters([target(1, 1)])).rets).toEqual([S.LLM_SUCCESS]);
  });

  test('a cluster being linked answers PROCESSING_LINK to a concurrent link or unlink', async () => {
    const { manager, executor } = setup();
    executor.hold();
    const first = manager.linkClusters([target(1)]);
    expect(await manager.linkClusters([target(1)])).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_PROCESSING_LINK] });
    expect((await manager.unlinkClusters([target(1)])).rets).toEqual([S.LLM_PROCESSING_LINK]);
    expect(manager.get('0', 1n)?.state).toBe('linking');
    executor.release();
    expect((await first).ret).toBe(S.LLM_SUCCESS);
  });

  test('an endpoint links from its own address unless the target names one', async () => {
    const executor = new FakeExecutor();
    const seen: unknown[] = [];
    const manager = new LinkManager({
      executor: {
        link: (e, c, t) => (seen.push(...c.map((x) => x.local)), executor.link(e, c, t)),
        unlink: (e, c, t, f) => executor.unlink(e, c, t, f),
      },
      endpoints: ['0'],
      batchWindowMs: 0,
      localAddresses: new Map([['0', { ip: '127.0.0.3', port: 0 }]]),
    });
    await manager.linkClusters([target(1), { ...target(2), local: { ip: '127.0.0.9', port: 5 } }]);
    expect(seen).toEqual([
      { ip: '127.0.0.3', port: 0 },
      { ip: '127.0.0.9', port: 5 },
    ]);
  });

  test('force unlink is passed through and clears the local entry', async () => {
    const { manager, executor } = setup();
    await manager.linkClusters([target(1)]);
    expect((await manager.unlinkClusters([target(1)], { force: true, timeoutMs: 500 })).ret).toBe(S.LLM_SUCCESS);
    expect(executor.batches.at(-1)).toMatchObject({ op: 'unlink', force: true, timeoutMs: 500 });
    expect(manager.list()).toEqual([]);
  });
});

describe('forced unlink: the table says what the runtime holds', () => {
  test("a peer's ALREADY_LINK after a forced unlink here is a failed link; each link asks again until the peer lets go", async () => {
    const { manager, executor } = setup();
    await manager.linkClusters([target(1)]);
    expect((await manager.unlinkClusters([target(1)], { force: true })).ret).toBe(S.LLM_SUCCESS);
    // The peer still holds its end and refuses a new link from us.
    executor.refuse.set(26000, S.LLM_ALREADY_LINK);
    expect(await manager.linkClusters([target(1)])).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_ALREADY_LINK] });
    expect(executor.links.has('0/1')).toBe(false);
    expect(manager.get('0', 1n)).toMatchObject({ side: 'client', state: 'failed', code: S.LLM_ALREADY_LINK });
    const calls = executor.batches.length;
    expect((await manager.linkClusters([target(1)])).rets).toEqual([S.LLM_ALREADY_LINK]);
    expect(executor.batches.length).toBe(calls + 1);
    // The peer force-unlinks its end too: the next link is made, without unlinking first.
    executor.refuse.delete(26000);
    expect(await manager.linkClusters([target(1)])).toEqual({ ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    expect(manager.get('0', 1n)).toMatchObject({ side: 'client', state: 'linked', code: S.LLM_SUCCESS });
    expect(executor.batches.map((b) => `${b.op}${b.force ? '!' : ''}`)).toEqual(['link', 'unlink!', 'link', 'link', 'link']);
  });

  test('ALREADY_LINK for a link this runtime holds is linked, on the side the runtime holds it', async () => {
    const { manager, executor } = setup();
    // A peer linked to us and the runtime's event is not in yet; a client link the table never saw.
    executor.serverLinks.add('0/1');
    executor.links.add('0/2');
    expect((await manager.linkClusters([target(1), target(2)])).rets).toEqual([S.LLM_ALREADY_LINK, S.LLM_ALREADY_LINK]);
    expect(manager.list().map((l) => [l.remoteClusterId, l.side, l.state])).toEqual([
      [1n, 'server', 'linked'],
      [2n, 'client', 'linked'],
    ]);
  });

  test('a forced unlink of a listed link the runtime already dropped succeeds; of an unknown one, NOT_YET_LINK', async () => {
    const { manager, executor } = setup();
    await manager.linkClusters([target(1), target(2)]);
    // The peer force-unlinked its end first: the runtime dropped ours and said so.
    for (const id of [1n, 2n]) {
      executor.links.delete(`0/${id}`);
      manager.handleRuntimeEvent('0', { kind: 'peer-lost', side: 'client', remoteClusterId: id, code: S.LLM_LINK_FAILED });
    }
    expect(manager.list().map((l) => l.state)).toEqual(['failed', 'failed']);
    expect(await manager.unlinkClusters([target(1)], { force: true })).toEqual({ ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    // A normal unlink promises to tell the peer too, which it could not: it keeps the runtime's answer.
    expect(await manager.unlinkClusters([target(2)])).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_NOT_YET_LINK] });
    expect(manager.list()).toEqual([]);
    expect(await manager.unlinkClusters([target(1)], { force: true })).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_NOT_YET_LINK] });
  });
});

describe('runtime events that arrive after a call saw their effect', () => {
  test("P's forced unlink first: the late 'peer lost' of the old link does not fail D's relink; a new one does", async () => {
    let now = 1000;
    const { manager, executor } = setup({ now: () => now });
    await manager.linkClusters([target(1)]);
    // At 1200 P force-unlinks: D's runtime drops its end and queues the event, not delivered yet.
    executor.links.delete('0/1');
    const lost = { kind: 'peer-lost', side: 'client', remoteClusterId: 1n, code: S.LLM_LINK_FAILED } as const;
    now = 1300;
    expect(await manager.unlinkClusters([target(1)], { force: true })).toEqual({ ret: S.LLM_SUCCESS, rets: [S.LLM_SUCCESS] });
    now = 1400;
    expect((await manager.linkClusters([target(1)])).ret).toBe(S.LLM_SUCCESS);
    expect(manager.handleRuntimeEvent('0', { ...lost, timeMs: 1200 })).toBe(false);
    expect(manager.get('0', 1n)).toMatchObject({ state: 'linked' });
    // The new link's own loss, later than the call that made it, is news.
    expect(manager.handleRuntimeEvent('0', { ...lost, timeMs: 1500 })).toBe(true);
    expect(manager.get('0', 1n)).toMatchObject({ state: 'failed', code: S.LLM_LINK_FAILED });
  });

  test('a link lost while the call that made it is out is failed, not linked; an older loss is not about it', async () => {
    const now = 5000;
    const { manager, executor } = setup({ now: () => now });
    executor.hold();
    const call = manager.linkClusters([target(1), target(2)]);
    for (let turns = 0; executor.batches.length === 0 && turns < 1000; turns++) await new Promise((r) => setImmediate(r));
    expect(executor.batches).toHaveLength(1);
    const lost = { kind: 'peer-lost', side: 'client', code: S.LLM_LINK_FAILED } as const;
    // Cluster 1: a loss stamped before the call began, about an earlier link. Cluster 2: the peer
    // drops the link the call has just made, and says so before the call's answer is in.
    expect(manager.handleRuntimeEvent('0', { ...lost, remoteClusterId: 1n, timeMs: 4999 })).toBe(true);
    expect(manager.handleRuntimeEvent('0', { ...lost, remoteClusterId: 2n, timeMs: 5000 })).toBe(true);
    executor.release();
    expect((await call).rets).toEqual([S.LLM_SUCCESS, S.LLM_SUCCESS]);
    expect(manager.list().map((l) => [l.remoteClusterId, l.state, l.code])).toEqual([
      [1n, 'linked', S.LLM_SUCCESS],
      [2n, 'failed', S.LLM_LINK_FAILED],
    ]);
  });

  test('a late "peer linked" does not bring back a server link unlinked since; a link made after it does', async () => {
    let now = 2000;
    const { manager } = setup({ now: () => now });
    // The client linked at 1900; its event is still on the way when this end unlinks it.
    expect(await manager.unlinkClusters([target(7)], { force: true })).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_NOT_YET_LINK] });
    const linked = { kind: 'peer-linked', side: 'server', remoteClusterId: 7n, code: 0 } as const;
    expect(manager.handleRuntimeEvent('0', { ...linked, timeMs: 1900 })).toBe(false);
    expect(manager.list()).toEqual([]);
    // Within the call's own millisecond the order is unknown: the event is taken as news.
    expect(manager.handleRuntimeEvent('0', { ...linked, timeMs: 2000 })).toBe(true);
    expect(manager.get('0', 7n)).toMatchObject({ side: 'server', state: 'linked' });
  });
});

describe('coalescing', () => {
  test('concurrent callers share runtime calls of at most 16 clusters', async () => {
    const { manager, executor } = setup({ batchWindowMs: 5 });
    const calls = Array.from({ length: 5 }, (_, c) => manager.linkClusters(Array.from({ length: 10 }, (_, i) => target(c * 100 + i))));
    const results = await Promise.all(calls);
    expect(results.every((r) => r.ret === S.LLM_SUCCESS && r.rets.length === 10)).toBe(true);
    expect(executor.batches.map((b) => b.ids.length)).toEqual([16, 16, 16, 2]);
    expect(executor.links.size).toBe(50);
  });

  test('different timeouts, operations and endpoints never share a call', async () => {
    const { manager, executor } = setup({ endpoints: ['0', '1'], batchWindowMs: 5 });
    await Promise.all([
      manager.linkClusters([target(1)], { timeoutMs: 1000 }),
      manager.linkClusters([target(2)], { timeoutMs: 2000 }),
      manager.linkClusters([target(3, 26000, '1')], { timeoutMs: 1000 }),
      manager.linkClusters([target(4)], { timeoutMs: 1000 }),
    ]);
    const shapes = executor.batches.map((b) => `${b.endpoint}:${b.timeoutMs}:${b.ids.join(',')}`).sort();
    expect(shapes).toEqual(['0:1000:1,4', '0:2000:2', '1:1000:3']);
  });

  test('maxBatch bounds each call', async () => {
    const { manager, executor } = setup({ maxBatch: 4 });
    await manager.linkClusters(Array.from({ length: 10 }, (_, i) => target(i)));
    expect(executor.batches.map((b) => b.ids.length)).toEqual([4, 4, 2]);
    expect(() => new LinkManager({ executor, endpoints: ['0'], maxBatch: 17 })).toThrow(RangeError);
    expect(() => new LinkManager({ executor, endpoints: [] })).toThrow(RangeError);
    expect(() => new LinkManager({ executor, endpoints: ['0'], batchWindowMs: -1 })).toThrow(RangeError);
    for (const parallelCalls of [0, 1.5, -1]) {
      expect(() => new LinkManager({ executor, endpoints: ['0'], parallelCalls })).toThrow('parallelCalls must be a positive integer');
    }
  });
});

describe('failures of the executor', () => {
  test('an indeterminate link fails its items with LLM_FAILED and clears local runtime state', async () => {
    const { manager, executor } = setup();
    executor.failNext = 'worker died';
    const result = await manager.linkClusters([target(1), target(2)]);
    expect(result).toEqual({ ret: S.LLM_FAILED, rets: [S.LLM_FAILED, S.LLM_FAILED] });
    expect(executor.batches.at(-1)).toMatchObject({ op: 'unlink', force: true, ids: [1n, 2n] });
    expect(manager.get('0', 1n)).toMatchObject({ state: 'failed', code: S.LLM_FAILED });
    expect((await manager.linkClusters([target(1)])).ret).toBe(S.LLM_SUCCESS);
  });

  test('an indeterminate unlink leaves a failed entry that a later unlink clears', async () => {
    const { manager, executor } = setup();
    await manager.linkClusters([target(1)]);
    executor.failNext = 'worker died';
    expect((await manager.unlinkClusters([target(1)])).rets).toEqual([S.LLM_FAILED]);
    expect(manager.get('0', 1n)?.state).toBe('failed');
    expect((await manager.unlinkClusters([target(1)])).ret).toBe(S.LLM_SUCCESS);
    expect(manager.list()).toEqual([]);
  });

  test('an executor that throws fails its items instead of hanging', async () => {
    const manager = new LinkManager({
      executor: { link: () => Promise.reject(new Error('boom')), unlink: () => Promise.reject(new Error('boom')) },
      endpoints: ['0'],
      batchWindowMs: 0,
    });
    expect((await manager.linkClusters([target(1)])).rets).toEqual([S.LLM_FAILED]);
  });
});

describe('runtime events', () => {
  test('server side: a client that links appears; one that is lost or unlinks disappears', () => {
    const { manager, events } = setup();
    manager.handleRuntimeEvent('0', { kind: 'peer-linked', side: 'server', remoteClusterId: 5n, code: 0 });
    expect(manager.get('0', 5n)).toMatchObject({ side: 'server', state: 'linked', remote: undefined });
    manager.handleRuntimeEvent('0', { kind: 'peer-lost', side: 'server', remoteClusterId: 5n, code: 0 });
    expect(manager.list()).toEqual([]);
    expect(events.at(-1)).toMatchObject({ reason: 'peer-lost', to: 'unlinked', code: S.LLM_LINK_FAILED });
    manager.handleRuntimeEvent('0', { kind: 'peer-linked', side: 'server', remoteClusterId: 5n, code: 0 });
    manager.handleRuntimeEvent('0', { kind: 'peer-unlinked', side: 'server', remoteClusterId: 5n, code: 0 });
    expect(manager.list()).toEqual([]);
  });

  test('noteRemote fills in the address of a server-side link only', async () => {
    const { manager } = setup();
    manager.handleRuntimeEvent('0', { kind: 'peer-linked', side: 'server', remoteClusterId: 5n, code: 0 });
    manager.noteRemote('0', 5n, { ip: '127.0.0.3', port: 40000 });
    expect(manager.get('0', 5n)).toMatchObject({ state: 'linked', side: 'server', remote: { ip: '127.0.0.3', port: 40000 } });
    await manager.linkClusters([target(1)]);
    manager.noteRemote('0', 1n, { ip: '127.0.0.9', port: 1 });
    manager.noteRemote('0', 99n, { ip: '127.0.0.9', port: 1 });
    expect(manager.get('0', 1n)?.remote).toEqual({ ip: '127.0.0.2', port: 26000 });
    expect(manager.get('0', 99n)).toBeUndefined();
  });

  test('client side: a lost peer or unusable link marks the link failed', async () => {
    const { manager } = setup();
    await manager.linkClusters([target(1), target(2)]);
    manager.handleRuntimeEvent('0', { kind: 'peer-lost', side: 'client', remoteClusterId: 1n, code: 0 });
    manager.handleRuntimeEvent('0', { kind: 'link-unusable', side: 'client', remoteClusterId: 2n, code: 0 });
    expect(manager.get('0', 1n)).toMatchObject({ state: 'failed', code: S.LLM_LINK_FAILED });
    expect(manager.get('0', 2n)).toMatchObject({ state: 'failed', code: S.LLM_WAIT_PROC_TIMEOUT });
    // Events about unknown links change nothing.
    manager.handleRuntimeEvent('0', { kind: 'peer-lost', side: 'client', remoteClusterId: 99n, code: 0 });
    manager.handleRuntimeEvent('0', { kind: 'peer-unlinked', side: 'server', remoteClusterId: 1n, code: 0 });
    expect(manager.list()).toHaveLength(2);
  });

  test('client side: a server that unlinks us (P-side cleanup) leaves a failed entry to relink', async () => {
    const { manager, executor } = setup();
    await manager.linkClusters([target(1)]);
    // The runtime drops the link before it reports the event.
    executor.links.delete('0/1');
    manager.handleRuntimeEvent('0', { kind: 'peer-unlinked', side: 'client', remoteClusterId: 1n, code: 0 });
    expect(manager.get('0', 1n)).toMatchObject({ state: 'failed', side: 'client', code: S.LLM_NOT_YET_LINK });
    const relinked = await manager.linkClusters([target(1)]);
    expect(relinked.ret).toBe(S.LLM_SUCCESS);
    expect(manager.get('0', 1n)?.state).toBe('linked');
  });

  test('a throwing listener does not stop the others', async () => {
    const { manager, events } = setup();
    const original = console.error;
    console.error = () => {};
    try {
      manager.onChange(() => {
        throw new Error('bad listener');
      });
      await manager.linkClusters([target(1)]);
    } finally {
      console.error = original;
    }
    expect(events).toHaveLength(2);
  });
});

test('metrics: links by state, call latency, batch sizes', async () => {
  const { manager, registry } = setup();
  await manager.linkClusters([target(1), target(2)]);
  const text = await registry.metrics();
  expect(text).toContain('pdlink_links{state="linked",side="client"} 2');
  expect(text).toContain('pdlink_link_call_duration_seconds_count{op="link"} 1');
  expect(text).toContain('pdlink_link_batch_size_sum{op="link"} 2');
});
