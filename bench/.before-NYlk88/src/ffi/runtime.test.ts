import { afterEach, describe, expect, test } from 'bun:test';
import { LLM_STATUS, LlmStatusError } from '../core/llm-status.ts';
import { EVENT_KIND, LINK_STATE, SIDE, type ClusterSpec, type PdrtEvent } from './layout.ts';
import * as rt from './runtime.ts';

const { LLM_SUCCESS, LLM_FAILED } = LLM_STATUS;
const open: number[] = [];

function context(clusterId: bigint, listenIp?: string): number {
  const handle = rt.create({
    clusterId,
    role: listenIp === undefined ? 'decoder' : 'prompt',
    ...(listenIp === undefined ? {} : { listenIp }),
  });
  open.push(handle);
  return handle;
}

function close(handle: number): void {
  open.splice(open.indexOf(handle), 1);
  rt.destroy(handle);
}

afterEach(() => {
  while (open.length > 0) rt.destroy(open.pop()!);
});

function target(id: bigint, handle: number, ip: string): ClusterSpec {
  return { remoteClusterId: id, remoteIp: ip, remotePort: rt.listenPort(handle) };
}

const byId = (id: bigint): ClusterSpec => ({ remoteClusterId: id, remoteIp: '', remotePort: 0 });

/** Waits (bounded) for an event of `kind` about `id`; other events are dropped. */
function nextEvent(handle: number, kind: number, id: bigint): PdrtEvent {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    rt.waitEvents(handle, Math.max(0, deadline - Date.now()));
    const hit = rt.pollEvents(handle).find((e) => e.kind === kind && e.remoteClusterId === id);
    if (hit !== undefined) return hit;
  }
  throw new Error(`no event ${kind} about cluster ${id}`);
}

function thrown(fn: () => unknown): LlmStatusError {
  try {
    fn();
  } catch (error) {
    if (error instanceof LlmStatusError) return error;
    throw error;
  }
  throw new Error('did not throw');
}

describe('contexts', () => {
  test('a listener gets an ephemeral port; a client-only context has none', () => {
    expect(rt.listenPort(context(1n, '127.0.0.2'))).toBeGreaterThan(0);
    expect(rt.listenPort(context(2n))).toBe(0);
    expect(rt.abiVersion()).toBe(2);
  });

  test('an address in use is LINK_FAILED; bad options name their field', () => {
    const p = context(1n, '127.0.0.2');
    expect(thrown(() => context(3n, '127.0.0.2:1')).message).toContain('listenIp');
    expect(thrown(() => rt.create({ clusterId: 3n, role: 'prompt', listenIp: '127.0.0.2', listenPort: rt.listenPort(p) })).code).toBe(
      LLM_STATUS.LLM_LINK_FAILED,
    );
    expect(thrown(() => rt.create({ clusterId: -1n, role: 'prompt' })).message).toContain('clusterId');
    expect(thrown(() => rt.create({ clusterId: 1n, role: 'boss' as 'prompt' })).message).toContain('role');
    expect(thrown(() => rt.create({ clusterId: 1n, role: 'prompt', listenPort: 26000 })).message).toContain('listenIp');
    expect(thrown(() => rt.create({ clusterId: 1n, role: 'prompt', listenIp: '127.0.0.2', listenPort: 70000 })).message).toContain(
      'listenPort',
    );
  });

  test('a destroyed or bogus handle is refused, not dereferenced', () => {
    const d = context(2n);
    close(d);
    expect(thrown(() => rt.destroy(d)).code).toBe(LLM_STATUS.LLM_PARAM_INVALID);
    expect(thrown(() => rt.listLinks(d)).code).toBe(LLM_STATUS.LLM_PARAM_INVALID);
    expect(thrown(() => rt.listLinks(0)).message).toContain('handle');
    expect(thrown(() => rt.setOption(context(4n), 'bogus' as 'sameHostFastpath', true)).message).toContain('option');
  });
});

describe('links', () => {
  test('link, events on the server, both sides listed, unlink', () => {
    const p = context(1n, '127.0.0.2');
    const d = context(2n);
    expect(rt.link(d, [target(1n, p, '127.0.0.2')], 2000)).toEqual({ ret: LLM_SUCCESS, rets: [LLM_SUCCESS] });
    const linked = nextEvent(p, EVENT_KIND.peerLinked, 2n);
    expect(linked.side).toBe(SIDE.server);
    expect(linked.code).toBe(LLM_SUCCESS);
    expect(linked.timeMs).toBeGreaterThan(Date.now() - 60_000);
    expect(rt.listLinks(d)).toEqual([
      {
        remoteClusterId: 1n,
        side: SIDE.client,
        state: LINK_STATE.linked,
        transfersInFlight: 0,
        remoteIp: '127.0.0.2',
        remotePort: rt.listenPort(p),
        sameHost: true,
      },
    ]);
    expect(rt.listLinks(p)).toMatchObject([{ remoteClusterId: 2n, side: SIDE.server, state: LINK_STATE.linked }]);

    expect(rt.link(d, [target(1n, p, '127.0.0.2')], 2000)).toEqual({ ret: LLM_FAILED, rets: [LLM_STATUS.LLM_ALREADY_LINK] });
    expect(rt.unlink(d, [byId(1n)], 2000)).toEqual({ ret: LLM_SUCCESS, rets: [LLM_SUCCESS] });
    expect(nextEvent(p, EVENT_KIND.peerUnlinked, 2n).side).toBe(SIDE.server);
    expect(rt.listLinks(d)).toEqual([]);
    expect(rt.listLinks(p)).toEqual([]);
    expect(rt.unlink(d, [byId(1n)], 2000)).toEqual({ ret: LLM_FAILED, rets: [LLM_STATUS.LLM_NOT_YET_LINK] });
    expect(rt.waitEvents(d, 0)).toBe(false);
  });

  test('a mixed batch reports one code per cluster, in input order', () => {
    const p = context(1n, '127.0.0.2');
    const p2 = context(3n, '127.0.0.3');
    const d = context(2n);
    const result = rt.link(
      d,
      [
        target(1n, p, '127.0.0.2'),
        { remoteClusterId: 5n, remoteIp: 'not an ip', remotePort: 1000 },
        target(1n, p, '127.0.0.2'),
        target(3n, p2, '127.0.0.3'),
        { remoteClusterId: 6n, remoteIp: '127.0.0.2', remotePort: 0 },
        { remoteClusterId: 7n, remoteIp: '127.0.0.2', remotePort: rt.listenPort(p) },
      ],
      2000,
    );
    expect(result).toEqual({
      ret: LLM_FAILED,
      rets: [
        LLM_SUCCESS,
        LLM_STATUS.LLM_PARAM_INVALID,
        LLM_STATUS.LLM_PROCESSING_LINK,
        LLM_SUCCESS,
        LLM_STATUS.LLM_PARAM_INVALID,
        LLM_STATUS.LLM_LINK_FAILED,
      ],
    });
  });

  test('a bad call throws; a bad entry the layout cannot carry names its field', () => {
    const d = context(2n);
    const seventeen = Array.from({ length: 17 }, (_, i) => ({ remoteClusterId: BigInt(i + 10), remoteIp: '127.0.0.2', remotePort: 1 }));
    expect(thrown(() => rt.link(d, seventeen, 1000)).code).toBe(LLM_STATUS.LLM_CLUSTER_NUM_EXCEED_LIMIT);
    expect(thrown(() => rt.unlink(d, seventeen, 1000)).code).toBe(LLM_STATUS.LLM_CLUSTER_NUM_EXCEED_LIMIT);
    expect(thrown(() => rt.link(d, [], 1000)).code).toBe(LLM_STATUS.LLM_PARAM_INVALID);
    expect(thrown(() => rt.link(d, [byId(1n)], 0)).message).toContain('timeoutMs');
    expect(thrown(() => rt.link(d, [byId(1n)], 1.5)).message).toContain('timeoutMs');
    const long = { remoteClusterId: 1n, remoteIp: '1'.repeat(64), remotePort: 1 };
    expect(thrown(() => rt.link(d, [byId(1n), long], 1000)).message).toContain('clusters[1].remoteIp');
    expect(thrown(() => rt.link(d, [{ ...long, remoteIp: '127.0.0.2', remotePort: 65536 }], 1000)).message).toContain(
      'clusters[0].remotePort',
    );
    expect(thrown(() => rt.link(d, [{ ...long, remoteIp: '127.0.0.2', remoteClusterId: 1n << 64n }], 1000)).message).toContain(
      'clusters[0].remoteClusterId',
    );
  });

  test('force unlink on the client leaves the server end until the server force-unlinks', () => {
    const p = context(1n, '127.0.0.2');
    const d = context(2n);
    const toP = target(1n, p, '127.0.0.2');
    expect(rt.link(d, [toP], 2000).ret).toBe(LLM_SUCCESS);
    nextEvent(p, EVENT_KIND.peerLinked, 2n);
    expect(rt.unlink(d, [byId(1n)], 1000, true).rets).toEqual([LLM_SUCCESS]);
    expect(rt.listLinks(d)).toEqual([]);
    expect(rt.listLinks(p)).toMatchObject([{ remoteClusterId: 2n, state: LINK_STATE.linked }]);
    expect(rt.link(d, [toP], 2000).rets).toEqual([LLM_STATUS.LLM_ALREADY_LINK]);
    expect(rt.waitEvents(p, 0)).toBe(false);
    expect(rt.unlink(p, [byId(2n)], 1000, true).rets).toEqual([LLM_SUCCESS]);
    expect(rt.link(d, [toP], 2000).rets).toEqual([LLM_SUCCESS]);
  });

  test('a dead peer is noticed without being asked, and the same cluster id links again', () => {
    const p = context(1n, '127.0.0.2');
    const toP = target(1n, p, '127.0.0.2');
    const d = context(2n);
    expect(rt.link(d, [toP], 2000).ret).toBe(LLM_SUCCESS);
    close(d);
    const lost = nextEvent(p, EVENT_KIND.peerLost, 2n);
    expect(lost.side).toBe(SIDE.server);
    expect(lost.code).toBe(LLM_STATUS.LLM_LINK_FAILED);
    expect(rt.listLinks(p)).toEqual([]);
    expect(rt.link(context(2n), [toP], 2000).ret).toBe(LLM_SUCCESS);
  });

  test('a server lists more links than the first buffer holds', () => {
    const p = context(1n, '127.0.0.2');
    const ids = Array.from({ length: 20 }, (_, i) => BigInt(100 + i));
    for (const id of ids) expect(rt.link(context(id), [target(1n, p, '127.0.0.2')], 2000).ret).toBe(LLM_SUCCESS);
    const listed = rt.listLinks(p);
    expect(listed.map((l) => l.remoteClusterId).sort((a, b) => Number(a - b))).toEqual(ids);
    expect(listed.every((l) => l.side === SIDE.server && l.state === LINK_STATE.linked)).toBe(true);
    expect(rt.pollEvents(p, 100).filter((e) => e.kind === EVENT_KIND.peerLinked)).toHaveLength(20);
  });

  test('records in a SharedArrayBuffer are linked as they are', () => {
    const p = context(1n, '127.0.0.2');
    const d = context(2n);
    const shared = new SharedArrayBuffer(144 + 4);
    const view = new DataView(shared);
    view.setBigUint64(0, 1n, true);
    view.setUint16(8, rt.listenPort(p), true);
    new Uint8Array(shared, 16, 9).set(new TextEncoder().encode('127.0.0.2'));
    const rets = new Int32Array(shared, 144, 1);
    rets[0] = 12345;
    expect(rt.linkRecords(d, new Uint8Array(shared, 0, 144), 1, 2000, rets)).toBe(LLM_SUCCESS);
    expect(rets[0]).toBe(LLM_SUCCESS);
    expect(rt.linkRecords(d, new Uint8Array(shared, 0, 144), 1, 2000, rets)).toBe(LLM_FAILED);
    expect(rets[0]).toBe(LLM_STATUS.LLM_ALREADY_LINK);
    expect(rt.unlinkRecords(d, new Uint8Array(shared, 0, 144), 1, 2000, false, rets)).toBe(LLM_SUCCESS);
    expect(rets[0]).toBe(LLM_SUCCESS);
    expect(thrown(() => rt.linkRecords(d, new Uint8Array(100), 1, 2000, rets)).message).toContain('records');
    expect(thrown(() => rt.linkRecords(d, new Uint8Array(288), 2, 2000, rets)).message).toContain('rets');
  });
});
