import { describe, expect, test } from 'bun:test';
import { LLM_STATUS as S } from '../../core/llm-status.ts';
import { BASE, peer, peerId, request, setupRole } from '../../../test/fixtures/role/controller.ts';

const P1 = '127.0.0.10';
const P2 = '127.0.0.11';
const P3 = '127.0.0.12';
/** `op endpoint id` for device pair i of each peer. */
const linkCalls = (op: string, ...peers: string[]) =>
  ['0', '1'].map((endpoint, i) => `${op} ${endpoint} ${peers.map((ip) => peerId(ip, i)).join(',')}`);

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

  test('more than 16 links on a device go out in runtime calls of at most 16', async () => {
    const { controller, executor } = setupRole();
    const many = Array.from({ length: 20 }, (_, n) => peer(`127.0.1.${n + 1}`));
    controller.submit(request('decode', many));
    await controller.whenReady();
    expect(executor.batches.map((b) => `${b.op} ${b.endpoint} ${b.ids.length}`).sort()).toEqual([
      'link 0 16',
      'link 0 4',
      'link 1 16',
      'link 1 4',
    ]);
    expect(controller.status().linkStatus).toMatchObject({ desired: 40, ok: 40 });
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
    expect(controller.status().linkStatus.peers.map((p) => `${p.target}/${p.device}:${p.link}`)).toEqual([
      `${P1}/0:ok`,
      `${P1}/1:ok`,
      `${P3}/0:ok`,
      `${P3}/1:ok`,
    ]);
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
    expect(status.linkStatus.peers[2]).toMatchObject({
      target: P2,
      device: 0,
      link: 'failed: LLM_LINK_FAILED',
      failures: 1,
      retryInMs: 200,
    });

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
    for (const [endpoint, id] of [
      ['0', peerId(P2, 0)],
      ['1', peerId(P2, 1)],
    ] as const) {
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

  test("after a local forced unlink the peer's ALREADY_LINK is shown failed and retried with the backoff until the peer lets go", async () => {
    const { controller, manager, executor, clock, calls } = setupRole({ retry: { baseMs: 200, capMs: 1000 } });
    controller.submit(request('decode', [peer(P1)]));
    await controller.whenReady();
    const id = peerId(P1, 0);
    expect(
      (await manager.unlinkClusters([{ endpoint: '0', remoteClusterId: id, remote: { ip: P1, port: BASE } }], { force: true })).ret,
    ).toBe(S.LLM_SUCCESS);
    // P still holds its end: it refuses every link from this cluster until it unlinks too.
    executor.refuse.set(BASE, S.LLM_ALREADY_LINK);
    const waits: number[] = [];
    for (let retry = 1; retry <= 3; retry++) {
      executor.batches.length = 0;
      waits.push(clock.nextTimerDue! - clock.now());
      clock.advance(clock.nextTimerDue! - clock.now());
      await controller.settled();
      // Nothing is left to clear after the forced unlink; after a refusal the failed entry is.
      expect(calls()).toEqual(retry === 1 ? [`link 0 ${id}`] : [`unlink 0 ${id}`, `link 0 ${id}`]);
      const status = controller.status();
      expect(status.service.roleStatus).toBe('RoleSwitching');
      expect(status.linkStatus).toMatchObject({ desired: 2, ok: 1, failed: 1 });
      // The forced unlink was the first failure; each refusal adds one.
      expect(status.linkStatus.peers[0]).toMatchObject({ link: 'failed: LLM_ALREADY_LINK', failures: retry + 1 });
      expect(status.service.lastError?.message).toContain('LLM_ALREADY_LINK');
    }
    expect(waits).toEqual([200, 400, 800]);
    expect(manager.get('0', id)).toMatchObject({ state: 'failed', code: S.LLM_ALREADY_LINK });
    executor.refuse.delete(BASE); // P force-unlinks its end
    clock.advance(clock.nextTimerDue! - clock.now());
    await controller.settled();
    expect(controller.roleStatus).toBe('RoleReady');
    expect(controller.status().linkStatus.peers[0]).toMatchObject({ link: 'ok', failures: 0 });
    expect(executor.links.has(`0/${id}`)).toBe(true);
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
