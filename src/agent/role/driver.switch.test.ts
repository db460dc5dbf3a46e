import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../../core/errors.ts';
import { LLM_STATUS as S } from '../../core/llm-status.ts';
import { peer, peerId, request, setupRole } from '../../../test/fixtures/role/controller.ts';
import { MAX_QUEUED_POSTS } from './driver.ts';

const P1 = '127.0.0.10';
const P2 = '127.0.0.11';
const P3 = '127.0.0.12';
/** `op endpoint id` for device pair i of each peer. */
const linkCalls = (op: string, ...peers: string[]) =>
  ['0', '1'].map((endpoint, i) => `${op} ${endpoint} ${peers.map((ip) => peerId(ip, i)).join(',')}`);

describe('prefill: the link server', () => {
  const D1 = '127.0.0.20';
  const D2 = '127.0.0.21';
  const D3 = '127.0.0.22';
  const linkFrom = (manager: ReturnType<typeof setupRole>['manager'], ip: string) => {
    for (const endpoint of ['0', '1'])
      manager.handleRuntimeEvent(endpoint, { kind: 'peer-linked', side: 'server', remoteClusterId: peerId(ip, Number(endpoint)), code: 0 });
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
    expect(controller.status().linkStatus.peers.map((p) => `${p.target}/${p.device}:${p.link}`)).toEqual([
      `${D1}/0:ok`,
      `${D1}/1:ok`,
      `${D2}/0:linking`,
      `${D2}/1:linking`,
    ]);
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

  test("the engine's part of a role change runs after the old links are gone, before the new ones, while RoleSwitching", async () => {
    const { controller, executor, manager, calls } = setupRole();
    const seen: string[] = [];
    let finish = (): void => {};
    controller.onRoleSwitch(async (from, to) => {
      seen.push(`${from ?? 'none'}→${to} with ${manager.list().length} links, ${calls().length} calls`);
      await new Promise<void>((resolve) => (finish = resolve));
    });
    controller.submit(request('decode', [peer(P1)]));
    await Bun.sleep(0);
    expect(seen).toEqual(['none→decode with 0 links, 0 calls']);
    finish();
    await controller.whenReady();
    executor.batches.length = 0;
    controller.submit(request('prefill', [peer(P2)]));
    await Bun.sleep(0);
    // Every link of the decode role is gone before the engine switches; nothing is linked meanwhile.
    expect(seen[1]).toBe('decode→prefill with 0 links, 2 calls');
    expect(controller.status().service).toMatchObject({ roleStatus: 'RoleSwitching', currentRole: 'decode', switchingTo: 'prefill' });
    finish();
    await controller.settled();
    expect(controller.status().service).toMatchObject({ currentRole: 'prefill' });
  });

  test('a failed engine switch shows in the status and the role changes anyway', async () => {
    const { controller } = setupRole();
    controller.onRoleSwitch(async () => {
      throw new Error('out of device memory');
    });
    controller.submit(request('prefill', []));
    await controller.settled();
    expect(controller.status().service).toMatchObject({
      currentRole: 'prefill',
      lastError: { message: "the engine's role switch to prefill failed: out of device memory" },
    });
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
    expect(controller.status().service).toMatchObject({
      roleStatus: 'RoleSwitching',
      currentRole: 'decode',
      switchingTo: 'decode',
      queuedPosts: 2,
    });
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
