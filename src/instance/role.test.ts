import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../errors.ts';
import { LLM_STATUS as S } from '../links/status.ts';
import { BASE, peer, peerId, request, setupRole } from '../../test/fixtures/role/controller.ts';
import { MAX_QUEUED_POSTS } from './role.ts';

const P1 = '127.0.0.10';
const P2 = '127.0.0.11';
const P3 = '127.0.0.12';
const ids = (ip: string, logical: readonly number[] = [0, 1]) => logical.map((d) => peerId(ip, d));
/** `op endpoint id` for device pair i of each peer. */
const linkCalls = (op: string, ...peers: string[]) => ['0', '1'].map((endpoint, i) => `${op} ${endpoint} ${peers.map((ip) => peerId(ip, i)).join(',')}`);

describe('decode: the link client', () => {
  test('a post links local device i with device i of every peer, in one batch per device, and reaches RoleReady', async () => {
    const { controller, calls, manager } = setupRole();
    expect(controller.status().service).toEqual({ roleStatus: 'RoleUnknown', currentRole: 'none', queuedPosts: 0 });
    controller.submit(request('decode', [peer(P1), peer(P2)]));
    expect(controller.roleStatus).toBe('RoleSwitching');
    await controller.whenReady();
    expect(calls()).toEqual(linkCalls('link', P1, P2));
    const status = controller.status();
    expect(status.service).toEqual({ roleStatus: 'RoleReady', currentRole: 'decode', queuedPosts: 0 });
    expect(status.linkStatus).toMatchObject({ desired: 4, ok: 4, linking: 0, failed: 0 });
    expect(status.linkStatus.peers[1]).toEqual({
      target: P1,
      device: 1,
      link: 'ok',
      localDevice: 1,
      peerDevice: 1,
      remote: `${P1}:${BASE + 1}`,
      remoteClusterId: Number(peerId(P1, 1)),
      failures: 0,
    });
    expect(manager.list().map((l) => [l.endpoint, l.remote?.ip, l.side, l.state])).toEqual([
      ['0', P1, 'client', 'linked'],
      ['0', P2, 'client', 'linked'],
      ['1', P1, 'client', 'linked'],
      ['1', P2, 'client', 'linked'],
    ]);
  });

  test('no peers: RoleReady with nothing to link', async () => {
    const { controller, calls } = setupRole();
    controller.submit(request('decode', []));
    await controller.whenReady();
    expect(calls()).toEqual([]);
    expect(controller.status().linkStatus).toEqual({ desired: 0, ok: 0, linking: 0, failed: 0, peers: [] });
  });

  test('the same role with a new peer list changes only the difference', async () => {
    const { controller, calls, executor } = setupRole();
    controller.submit(request('decode', [peer(P1), peer(P2)]));
    await controller.whenReady();
    executor.batches.length = 0;
    controller.submit(request('decode', [peer(P1), peer(P3)]));
    await controller.settled();
    expect(calls()).toEqual([...linkCalls('unlink', P2), ...linkCalls('link', P3)]);
    expect(controller.status().linkStatus.peers.map((p) => `${p.target}/${p.device}:${p.link}`)).toEqual([`${P1}/0:ok`, `${P1}/1:ok`, `${P3}/0:ok`, `${P3}/1:ok`]);
    executor.batches.length = 0;
    controller.submit(request('decode', [peer(P1), peer(P3)]));
    await controller.settled();
    expect(calls()).toEqual([]);
  });

  test('the seed example pairs by position: a repeated peer logical id gives two links to one peer device', async () => {
    const { controller, manager } = setupRole();
    controller.submit(request('decode', [peer(P1, [0, 0])]));
    await controller.whenReady();
    expect(manager.list().map((l) => [l.endpoint, l.remote?.port])).toEqual([
      ['0', BASE],
      ['1', BASE],
    ]);
  });

  test('a failed link shows failed: <code> and is retried with capped exponential backoff until it links', async () => {
    const { controller, executor, clock, calls } = setupRole({ retry: { baseMs: 200, capMs: 1000 } });
    executor.refuse.set(BASE + 2, S.LLM_LINK_FAILED);
    controller.submit(request('decode', [peer(P1), peer(P2, [2, 3])]));
    await controller.settled();
    let status = controller.status();
    expect(status.service.roleStatus).toBe('RoleSwitching');
    expect(status.service.lastError?.message).toContain('LLM_LINK_FAILED');
    expect(status.linkStatus).toMatchObject({ desired: 4, ok: 3, failed: 1 });
    expect(status.linkStatus.peers[2]).toMatchObject({ target: P2, device: 0, link: 'failed: LLM_LINK_FAILED', failures: 1, retryInMs: 200 });

    const waits: number[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      const due = clock.nextTimerDue!;
      waits.push(due - clock.now());
      executor.batches.length = 0;
      clock.advance(due - clock.now() - 1);
      expect(calls()).toEqual([]);
      clock.advance(1);
      await controller.settled();
      // The failed entry is cleared (unlink answers NOT_YET_LINK) before the link is tried again.
      expect(calls()).toEqual([`unlink 0 ${peerId(P2, 2)}`, `link 0 ${peerId(P2, 2)}`]);
    }
    expect(waits).toEqual([200, 400, 800, 1000, 1000]);
    expect(controller.status().linkStatus.peers[2]).toMatchObject({ link: 'failed: LLM_LINK_FAILED', failures: 6 });

    executor.refuse.clear();
    clock.advance(clock.nextTimerDue! - clock.now());
    await controller.settled();
    status = controller.status();
    expect(status.service.roleStatus).toBe('RoleReady');
    expect(status.linkStatus.peers[2]).toMatchObject({ link: 'ok', failures: 0 });
    expect(status.linkStatus.peers[2]!.retryInMs).toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
  });

  test('a dead peer (PEER_LOST) turns its links failed; the retry relinks once it listens again', async () => {
    const { controller, executor, manager, clock } = setupRole();
    controller.submit(request('decode', [peer(P1), peer(P2)]));
    await controller.whenReady();
    for (const [endpoint, id] of [['0', peerId(P2, 0)], ['1', peerId(P2, 1)]] as const) {
      executor.links.delete(`${endpoint}/${id}`); // the runtime dropped it
      executor.refuse.set(BASE + Number(endpoint), S.LLM_LINK_FAILED);
      manager.handleRuntimeEvent(endpoint, { kind: 'peer-lost', side: 'client', remoteClusterId: id, code: S.LLM_LINK_FAILED });
    }
    expect(controller.roleStatus).toBe('RoleSwitching');
    expect(controller.status().linkStatus.peers.map((p) => `${p.target}/${p.device}:${p.link}`)).toEqual([
      `${P1}/0:ok`,
      `${P1}/1:ok`,
      `${P2}/0:failed: LLM_LINK_FAILED`,
      `${P2}/1:failed: LLM_LINK_FAILED`,
    ]);
    clock.advance(200);
    await controller.settled();
    expect(controller.status().linkStatus.failed).toBe(2); // still down: retried and refused
    executor.refuse.clear(); // a replacement listens at the same addresses
    clock.advance(400);
    await controller.settled();
    expect(controller.roleStatus).toBe('RoleReady');
    expect(manager.list().filter((l) => l.state === 'linked')).toHaveLength(4);
  });

  test('a link the peer unlinked (client-side PEER_UNLINKED) is no longer reported ok and is relinked', async () => {
    const { controller, executor, clock, calls } = setupRole();
    controller.submit(request('decode', [peer(P1)]));
    await controller.whenReady();
    executor.links.delete(`0/${peerId(P1, 0)}`);
    controller.handleRuntimeEvent('0', { kind: 'peer-unlinked', side: 'client', remoteClusterId: peerId(P1, 0), code: 0 });
    expect(controller.status().linkStatus.peers[0]!.link).toBe('failed: LLM_NOT_YET_LINK');
    executor.batches.length = 0;
    clock.advance(200);
    await controller.settled();
    expect(calls()).toEqual([`unlink 0 ${peerId(P1, 0)}`, `link 0 ${peerId(P1, 0)}`]);
    expect(controller.roleStatus).toBe('RoleReady');
  });

  test('a desired link unlinked by hand is put back by the retry', async () => {
    const { controller, manager, clock } = setupRole();
    controller.submit(request('decode', [peer(P1)]));
    await controller.whenReady();
    await manager.unlinkClusters([{ endpoint: '1', remoteClusterId: peerId(P1, 1), remote: { ip: P1, port: BASE + 1 } }]);
    expect(controller.status().linkStatus.peers[1]!.link).toBe('failed: LLM_NOT_YET_LINK');
    clock.advance(200);
    await controller.settled();
    expect(controller.roleStatus).toBe('RoleReady');
  });

  test('the 200 does not wait for links: a post returns while its peer never answers', async () => {
    const { controller, executor } = setupRole();
    executor.hold();
    controller.submit(request('decode', [peer(P1)]));
    await Bun.sleep(0); // let the driver reach the runtime call
    expect(executor.batches).toHaveLength(2);
    expect(controller.status().linkStatus.peers.map((p) => p.link)).toEqual(['linking', 'linking']);
    expect(controller.status().service).toMatchObject({ roleStatus: 'RoleSwitching', switchingTo: 'decode' });
    executor.release();
    await controller.whenReady();
  });
});

describe('prefill: the link server', () => {
  const D1 = '127.0.0.20';
  const D2 = '127.0.0.21';
  const D3 = '127.0.0.22';
  const linkFrom = (manager: ReturnType<typeof setupRole>['manager'], ip: string) => {
    for (const endpoint of ['0', '1']) manager.handleRuntimeEvent(endpoint, { kind: 'peer-linked', side: 'server', remoteClusterId: peerId(ip, Number(endpoint)), code: 0 });
  };

  test('before its first post a prefill agent accepts any client; the post unlinks clients it does not name', async () => {
    const { controller, manager, calls } = setupRole();
    linkFrom(manager, D1);
    linkFrom(manager, D3);
    expect(manager.list()).toHaveLength(4);
    controller.submit(request('prefill', [peer(D1), peer(D2)]));
    await controller.settled();
    expect(calls()).toEqual(linkCalls('unlink', D3));
    expect(manager.list().map((l) => [l.endpoint, l.remoteClusterId])).toEqual([
      ['0', peerId(D1, 0)],
      ['1', peerId(D1, 1)],
    ]);
    // D2 has not linked yet: waiting for it, not failed.
    expect(controller.status().linkStatus.peers.map((p) => `${p.target}/${p.device}:${p.link}`)).toEqual([`${D1}/0:ok`, `${D1}/1:ok`, `${D2}/0:linking`, `${D2}/1:linking`]);
    expect(controller.roleStatus).toBe('RoleSwitching');
    linkFrom(manager, D2);
    expect(controller.status().service).toEqual({ roleStatus: 'RoleReady', currentRole: 'prefill', queuedPosts: 0 });
  });

  test('clients linking between posts are kept until the next post, which drops the ones it does not name', async () => {
    const { controller, manager, calls, executor } = setupRole();
    controller.submit(request('prefill', [peer(D1)]));
    await controller.settled();
    linkFrom(manager, D1);
    linkFrom(manager, D3); // told to the decode side first, perhaps
    expect(controller.roleStatus).toBe('RoleReady');
    expect(manager.list()).toHaveLength(4);
    executor.batches.length = 0;
    controller.submit(request('prefill', [peer(D3)]));
    await controller.settled();
    expect(calls()).toEqual(linkCalls('unlink', D1));
    expect(controller.roleStatus).toBe('RoleReady');
  });

  test('a decode peer that dies takes the prefill side out of RoleReady until it links again', async () => {
    const { controller, manager } = setupRole();
    controller.submit(request('prefill', [peer(D1)]));
    await controller.settled();
    linkFrom(manager, D1);
    expect(controller.roleStatus).toBe('RoleReady');
    manager.handleRuntimeEvent('1', { kind: 'peer-lost', side: 'server', remoteClusterId: peerId(D1, 1), code: S.LLM_LINK_FAILED });
    expect(controller.status().linkStatus.peers.map((p) => p.link)).toEqual(['ok', 'linking']);
    expect(controller.roleStatus).toBe('RoleSwitching');
    linkFrom(manager, D1);
    expect(controller.roleStatus).toBe('RoleReady');
  });
});

describe('role changes and ordering', () => {
  test('decode → prefill unlinks every link (client and server side) before switching, then applies the new set', async () => {
    const { controller, executor, manager, calls } = setupRole();
    controller.submit(request('decode', [peer(P1)]));
    await controller.whenReady();
    manager.handleRuntimeEvent('0', { kind: 'peer-linked', side: 'server', remoteClusterId: peerId(P3, 0), code: 0 });
    executor.batches.length = 0;
    executor.hold();
    controller.submit(request('prefill', [peer(P2)]));
    await Bun.sleep(0);
    expect(controller.status().service).toMatchObject({ roleStatus: 'RoleSwitching', currentRole: 'decode', switchingTo: 'prefill' });
    expect(controller.status().linkStatus.peers).toEqual([]);
    executor.release();
    await controller.settled();
    expect(calls().sort()).toEqual([`unlink 0 ${peerId(P1, 0)},${peerId(P3, 0)}`, `unlink 1 ${peerId(P1, 1)}`].sort());
    expect(manager.list()).toEqual([]);
    expect(executor.links.size).toBe(0);
    expect(controller.status().service).toMatchObject({ currentRole: 'prefill', roleStatus: 'RoleSwitching' });
  });

  test('a normal unlink that fails falls back to force', async () => {
    const { controller, executor, calls } = setupRole();
    controller.submit(request('decode', [peer(P1, [0, 1])]));
    await controller.whenReady();
    executor.batches.length = 0;
    executor.failNext = 'worker died';
    controller.submit(request('decode', []));
    await controller.settled();
    // The first batch's worker "died": its outcome is unknown, so the driver forces the local end.
    expect(calls()).toEqual([`unlink 0 ${peerId(P1, 0)}`, `unlink 1 ${peerId(P1, 1)}`, `unlink! 0 ${peerId(P1, 0)}`]);
    expect(executor.links.size).toBe(0);
  });

  test('posts are applied in arrival order; queued posts of one role collapse into the latest', async () => {
    const { controller, executor, calls, metrics } = setupRole();
    executor.hold();
    controller.submit(request('decode', [peer(P1)]));
    await Bun.sleep(0);
    controller.submit(request('prefill', []));
    controller.submit(request('decode', [peer(P2)]));
    controller.submit(request('decode', [peer(P3)]));
    expect(controller.status().service).toMatchObject({ roleStatus: 'RoleSwitching', currentRole: 'decode', switchingTo: 'decode', queuedPosts: 2 });
    executor.release();
    await controller.settled();
    expect(calls()).toEqual([...linkCalls('link', P1), ...linkCalls('unlink', P1), ...linkCalls('link', P3)]);
    expect(controller.status().service).toEqual({ roleStatus: 'RoleReady', currentRole: 'decode', queuedPosts: 0 });
    const text = await metrics.metrics();
    expect(text).toContain('pdlink_role_switches_total{from="none",to="decode"} 1');
    expect(text).toContain('pdlink_role_switches_total{from="decode",to="prefill"} 1');
    expect(text).toContain('pdlink_role_switches_total{from="prefill",to="decode"} 1');
    expect(text).toContain('pdlink_role_posts_total{role="decode"} 3');
  });

  test(`more than ${MAX_QUEUED_POSTS} waiting posts → 429, nothing queued`, async () => {
    const { controller, executor } = setupRole();
    executor.hold();
    controller.submit(request('decode', [peer(P1)]));
    for (let i = 0; i < MAX_QUEUED_POSTS; i++) controller.submit(request(i % 2 === 0 ? 'prefill' : 'decode', []));
    expect(() => controller.submit(request('prefill', []))).toThrow(expect.objectContaining({ status: 429 }));
    expect(controller.status().service.queuedPosts).toBe(MAX_QUEUED_POSTS);
    // The same role as the last queued post still collapses into it.
    controller.submit(request('decode', [peer(P2)]));
    executor.release();
    await controller.settled();
    expect(controller.role).toBe('decode');
  });

  test('a request for devices this agent does not serve → 422 naming the field; nothing changes', () => {
    const { controller } = setupRole();
    const bad = { ...request('decode', []), local: { serverIp: '127.0.0.2', devices: [{ logicalId: 5, deviceIp: '127.0.0.2' }] } };
    let error: unknown;
    try {
      controller.submit(bad);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(PdlinkError);
    expect((error as PdlinkError).status).toBe(422);
    expect((error as PdlinkError).issues[0]?.path).toBe('local.device[0].device_logical_id');
    expect(controller.roleStatus).toBe('RoleUnknown');
  });
});

describe('metrics and shutdown', () => {
  test('desired vs linked, retries and reconcile latency are exported', async () => {
    const { controller, executor, clock, metrics } = setupRole();
    executor.refuse.set(BASE + 1, S.LLM_TIMEOUT);
    controller.submit(request('decode', [peer(P1)]));
    await controller.settled();
    let text = await metrics.metrics();
    expect(text).toContain('pdlink_role_links{state="desired"} 2');
    expect(text).toContain('pdlink_role_links{state="linked"} 1');
    executor.refuse.clear();
    clock.advance(200);
    await controller.settled();
    text = await metrics.metrics();
    expect(text).toContain('pdlink_role_links{state="linked"} 2');
    expect(text).toContain('pdlink_role_link_retries_total 1');
    expect(text).toContain('pdlink_role_reconcile_duration_seconds_count 1');
    expect(text).toContain('pdlink_role_reconcile_duration_seconds_sum 0.2');
  });

  test('close stops retries, rejects waiters and refuses new posts', async () => {
    const { controller, executor, clock } = setupRole();
    executor.refuse.set(BASE, S.LLM_LINK_FAILED);
    controller.submit(request('decode', [peer(P1)]));
    await controller.settled();
    const waiting = controller.whenReady();
    expect(clock.pendingTimers).toBe(1);
    await controller.close();
    expect(clock.pendingTimers).toBe(0);
    expect(waiting).rejects.toThrow('shutting down');
    expect(() => controller.submit(request('decode', []))).toThrow('shutting down');
  });
});
