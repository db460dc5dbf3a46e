/**
 * The reference runtime across processes: P and D contexts in separate processes on distinct
 * loopback addresses, driven through the FFI facade (test/fixtures/runtime/peer.ts).
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_KIND, SIDE } from '../src/ffi/layout.ts';
import { LLM_STATUS } from '../src/core/llm-status.ts';
import { Peer } from './support/runtime-peer.ts';

const BLOCK = 4096;
const NBLOCKS = 64;
/** Each test starts up to three Bun processes on a shared, busy machine: far above what they need. */
const TEST_TIMEOUT_MS = 60_000;

const peers: Peer[] = [];
afterEach(async () => {
  await Promise.all(peers.splice(0).map((p) => p.kill()));
});

async function prompt(clusterId: string, listenIp: string): Promise<{ peer: Peer; port: number }> {
  const peer = new Peer();
  peers.push(peer);
  const { port } = await peer.ok('create', { clusterId, role: 'prompt', listenIp });
  await peer.ok('register', { cacheId: '1', numBlocks: NBLOCKS, blockBytes: BLOCK });
  await peer.ok('fill', { cacheId: '1', seed: 5, count: NBLOCKS, blockBytes: BLOCK });
  return { peer, port: port as number };
}

async function decoder(clusterId: string, sameHost: boolean): Promise<Peer> {
  const peer = new Peer();
  peers.push(peer);
  await peer.ok('create', { clusterId, role: 'decoder', sameHost });
  await peer.ok('register', { cacheId: '2', numBlocks: NBLOCKS, blockBytes: BLOCK });
  return peer;
}

function pattern(seed: number, b: number): Buffer {
  return Buffer.from(Uint8Array.from({ length: BLOCK }, (_, i) => (seed * 131 + b * 31 + i * 7) & 0xff));
}

async function waitEvent(peer: Peer, kind: number, id: string): Promise<Record<string, unknown>> {
  const { event } = await peer.ok('waitEvent', { kind, id, timeoutMs: 10_000 });
  expect(event).not.toBeNull();
  return event as Record<string, unknown>;
}

/** Polls a condition with a bounded deadline. */
async function until(what: string, cond: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`not reached: ${what}`);
    await Bun.sleep(5);
  }
}

const linkTo = (port: number, localIp: string) => ({ clusters: [{ id: '1', ip: '127.0.0.2', port, localIp }], timeoutMs: 3000 });
const pullArgs = (timeoutMs: number) => ({
  remoteClusterId: '1',
  remoteCacheId: '1',
  remoteBlocks: [63, 0, 17, 17],
  localCacheId: '2',
  localBlocks: [1, 2, 3, 60],
  timeoutMs,
});

describe('runtime across processes', () => {
  test(
    'D links from its own address; bytes P wrote are pulled by D over TCP and over shared memory',
    async () => {
      const { peer: p, port } = await prompt('1', '127.0.0.2');
      const overTcp = await decoder('2', false);
      const overShm = await decoder('3', true);
      expect(await overTcp.ok('link', linkTo(port, '127.0.0.3'))).toMatchObject({ ret: 0, rets: [0] });
      expect(await overShm.ok('link', linkTo(port, '127.0.0.4'))).toMatchObject({ ret: 0, rets: [0] });
      expect((await waitEvent(p, EVENT_KIND.peerLinked, '2'))['side']).toBe(SIDE.server);
      await waitEvent(p, EVENT_KIND.peerLinked, '3');
      const links = (await p.ok('links'))['links'] as { remoteClusterId: string; remoteIp: string; sameHost: boolean }[];
      expect(links.map((l) => [l.remoteClusterId, l.remoteIp, l.sameHost]).sort()).toEqual([
        ['2', '127.0.0.3', false],
        ['3', '127.0.0.4', true],
      ]);

      for (const [d, sameHost] of [
        [overTcp, false],
        [overShm, true],
      ] as const) {
        expect(((await d.ok('links'))['links'] as { sameHost: boolean }[])[0]?.sameHost).toBe(sameHost);
        expect(await d.call('pull', pullArgs(3000))).toMatchObject({ ok: true });
        const { base64 } = await d.ok('read', { cacheId: '2', blocks: [1, 2, 3, 60, 4], blockBytes: BLOCK });
        const got = Buffer.from(base64 as string, 'base64');
        expect(got.subarray(0, 4 * BLOCK)).toEqual(Buffer.concat([pattern(5, 63), pattern(5, 0), pattern(5, 17), pattern(5, 17)]));
        expect(got.subarray(4 * BLOCK).every((b) => b === 0)).toBe(true);
      }
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'kill -9 D: P gets PEER_LOST, its link is gone, and a new D with the same cluster id links again',
    async () => {
      const { peer: p, port } = await prompt('1', '127.0.0.2');
      const d = await decoder('2', true);
      expect(await d.ok('link', linkTo(port, '127.0.0.3'))).toMatchObject({ ret: 0 });
      await waitEvent(p, EVENT_KIND.peerLinked, '2');
      await d.kill();
      const lost = await waitEvent(p, EVENT_KIND.peerLost, '2');
      expect(lost).toMatchObject({ side: SIDE.server, code: LLM_STATUS.LLM_LINK_FAILED });
      expect((await p.ok('links'))['links']).toEqual([]);

      const again = await decoder('2', true);
      expect(await again.ok('link', linkTo(port, '127.0.0.3'))).toMatchObject({ ret: 0, rets: [0] });
      await waitEvent(p, EVENT_KIND.peerLinked, '2');
      expect(await again.call('pull', pullArgs(3000))).toMatchObject({ ok: true });
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'kill -9 P mid-pull: D gets a code back within its timeout, and PEER_LOST',
    async () => {
      const { peer: p, port } = await prompt('1', '127.0.0.2');
      const d = await decoder('2', false);
      expect(await d.ok('link', linkTo(port, '127.0.0.3'))).toMatchObject({ ret: 0 });
      expect(await d.call('pull', pullArgs(3000))).toMatchObject({ ok: true });

      // A stopped P keeps its sockets but answers nothing: the next pull stays in flight.
      process.kill(p.pid, 'SIGSTOP');
      await until('P stopped', () => readFileSync(`/proc/${p.pid}/stat`, 'utf8').split(') ')[1]?.startsWith('T') ?? false);
      const timeoutMs = 15_000;
      const pull = d.call('pull', pullArgs(timeoutMs), timeoutMs + 5000);
      await until('pull in flight', async () => {
        const links = (await d.ok('links'))['links'] as { transfersInFlight: number }[];
        return (links[0]?.transfersInFlight ?? 0) > 0;
      });
      await p.kill();
      const reply = await pull;
      expect(reply).toMatchObject({ ok: false, code: LLM_STATUS.LLM_LINK_FAILED });
      expect(reply['elapsedMs'] as number).toBeLessThan(timeoutMs);
      expect(await waitEvent(d, EVENT_KIND.peerLost, '1')).toMatchObject({ side: SIDE.client });
      expect((await d.ok('links'))['links']).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
