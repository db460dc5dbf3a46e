/**
 * Transfer faults between real `pdlink instance` processes, over shared memory and over TCP:
 * P killed (kill -9) mid-pull, unlink during a pull, a pull that times out. A stopped P
 * (SIGSTOP) holds a pull in flight deterministically: D's request waits on P's answer.
 * The Coordinator's KV ledger, driven here in the test process, shows the accounting that
 * follows a failed transfer: the reservation is released.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { TestCluster } from './doubles/cluster.ts';
import { KvLedger } from '../src/ledger/index.ts';
import {
  cleanupConfigs,
  link,
  patternOf,
  prepareCache,
  readBack,
  startAgent,
  stop,
  transferInFlight,
  until,
  type Agent,
} from './fixtures/transfers/harness.ts';

const BLOCK = 64 * 1024;
const NBLOCKS = 64;
const TEST_TIMEOUT_MS = 60_000;
const ALL = Array.from({ length: NBLOCKS }, (_, b) => b);

const prompts: Agent[] = [];
const decoders: Agent[] = [];

afterEach(async () => {
  // A stopped process cannot act on SIGTERM: resume, then kill.
  await Promise.all(
    prompts.splice(0).map(async (p) => {
      if (p.child.process.exitCode === null && p.child.process.signalCode === null) process.kill(p.pid, 'SIGCONT');
      await p.child.kill('SIGKILL');
    }),
  );
});

afterAll(async () => {
  await Promise.all(decoders.map((d) => d.child.kill('SIGTERM')));
  cleanupConfigs();
});

async function freshPrompt(): Promise<Agent> {
  const p = await startAgent('127.0.0.2', { sameHost: true });
  prompts.push(p);
  await prepareCache(p, 1, NBLOCKS, BLOCK, 5);
  return p;
}

const pullFrom = (p: Agent, timeout: number, extra: object = {}) => ({
  remote_cluster_id: p.clusterId.toString(),
  remote_cache_id: 1,
  src_blocks: ALL,
  dst_cache_id: 2,
  dst_blocks: [...ALL].reverse(),
  timeout,
  ...extra,
});

const target = (p: Agent) => ({ remote_cluster_id: p.clusterId.toString(), remote_ip_info: `${p.ip}:${p.linkPort}` });
const linkOf = async (d: Agent, p: Agent) =>
  ((await d.get('/v1/links')).links as { remote_cluster_id: number; state: string; code_name: string }[]).find(
    (l) => String(l.remote_cluster_id) === p.clusterId.toString(),
  );

describe.each([
  ['shared memory', true, '127.0.0.3'],
  ['TCP', false, '127.0.0.4'],
])('faults over %s', (_, sameHost, dIp) => {
  let d: Agent;

  beforeAll(async () => {
    d = await startAgent(dIp, { sameHost });
    decoders.push(d);
    await prepareCache(d, 2, NBLOCKS, BLOCK);
  }, TEST_TIMEOUT_MS);

  test(
    'kill -9 P mid-pull: D answers with a code within its timeout, and the ledger releases the reservation',
    async () => {
      const p = await freshPrompt();
      await link(d, p);
      expect((await d.get('/v1/kv/links')).links[0]).toMatchObject({ same_host: sameHost });

      // The Coordinator's side: P 0 and D 1, a reservation moving to `transferring`.
      const cluster = new TestCluster();
      cluster.refresh([
        { id: 0, role: 'prefill', availSlots: 4, availBlocks: 1000 },
        { id: 1, role: 'decode', availSlots: 4, availBlocks: 1000 },
      ]);
      const ledger = new KvLedger({ cluster });
      ledger.reserve({ requestId: 'r1', p: 0, d: 1, pBlocks: NBLOCKS, dBlocks: NBLOCKS });
      ledger.begin('r1', 'transferring');
      expect(ledger.totals()).toMatchObject({ active: 1, reservedBlocks: 2 * NBLOCKS, reservedSlots: 2 });

      await stop(p.pid);
      const timeoutMs = 15_000;
      const started = Date.now();
      const pull = d.post('/v1/kv/pull', pullFrom(p, timeoutMs));
      await transferInFlight(d, p.clusterId);
      expect(await p.child.kill('SIGKILL')).toBe('SIGKILL');
      const res = await pull;
      expect(Date.now() - started).toBeLessThan(timeoutMs);
      expect(res).toMatchObject({ ret: 0x5010b009, ret_name: 'LLM_LINK_FAILED', bytes: 0 });

      ledger.fail('r1', res.ret_name, 'pull from P failed');
      expect(ledger.totals()).toMatchObject({ active: 0, reservedBlocks: 0, reservedSlots: 0, failed: 1 });
      expect(ledger.snapshot().recent[0]).toMatchObject({ requestId: 'r1', state: 'failed', code: 'LLM_LINK_FAILED' });
      expect(ledger.instanceLoad(0)).toMatchObject({ reservedBlocks: 0 });
      ledger.close();

      // D noticed the dead peer: its link is marked failed, and nothing is left in flight.
      await until(async () => ((await linkOf(d, p))?.state === 'failed' ? true : undefined), 'D marks the link to the dead P failed');
      expect((await d.get('/v1/kv/links')).links).toEqual([]);
      expect((await d.get('/v1/kv/transfers')).transfers).toEqual([]);
      expect((await d.post('/v1/links/unlink', { clusters: [target(p)] })).rets[0].name).toBe('LLM_NOT_YET_LINK');
      expect(await linkOf(d, p)).toBeUndefined();
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'unlink during a pull → LINK_BUSY; the pull then completes with the right bytes; unlink succeeds',
    async () => {
      const p = await freshPrompt();
      await link(d, p);
      await stop(p.pid);
      const pull = d.post('/v1/kv/pull', pullFrom(p, 20_000));
      await transferInFlight(d, p.clusterId);
      const busy = await d.post('/v1/links/unlink', { clusters: [target(p)], timeout: 2000 });
      expect(busy.rets[0].name).toBe('LLM_LINK_BUSY');
      expect(await linkOf(d, p)).toMatchObject({ state: 'linked' });
      process.kill(p.pid, 'SIGCONT');
      expect(await pull).toEqual({ ret: 0, ret_name: 'LLM_SUCCESS', bytes: NBLOCKS * BLOCK, blocks: NBLOCKS });
      expect((await readBack(d, 2, [...ALL].reverse())).equals(patternOf(5, ALL, BLOCK))).toBe(true);
      expect((await d.post('/v1/links/unlink', { clusters: [target(p)] })).rets[0].name).toBe('LLM_SUCCESS');
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'force unlink during a pull → the pull fails cleanly with LINK_FAILED; D and P go on',
    async () => {
      const p = await freshPrompt();
      await link(d, p);
      await stop(p.pid);
      const started = Date.now();
      const pull = d.post('/v1/kv/pull', pullFrom(p, 20_000));
      await transferInFlight(d, p.clusterId);
      expect((await d.post('/v1/links/unlink', { clusters: [target(p)], force: true })).rets[0].name).toBe('LLM_SUCCESS');
      const res = await pull;
      expect(res).toMatchObject({ ret_name: 'LLM_LINK_FAILED', bytes: 0 });
      expect(Date.now() - started).toBeLessThan(20_000);
      process.kill(p.pid, 'SIGCONT');
      // Force clears only D's end: P drops its own (both sides call it), then they link again.
      const fromP = { remote_cluster_id: d.clusterId.toString(), remote_ip_info: `${d.ip}:${d.linkPort}` };
      expect((await p.post('/v1/links/unlink', { clusters: [fromP], force: true })).rets[0].name).toBe('LLM_SUCCESS');
      await link(d, p);
      expect(await d.post('/v1/kv/pull', pullFrom(p, 10_000))).toMatchObject({ ret: 0, bytes: NBLOCKS * BLOCK });
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a pull that outlives its timeout → TIMEOUT; the link turns unusable and the link manager marks it; unlink and link recover',
    async () => {
      const p = await freshPrompt();
      await link(d, p);
      await stop(p.pid);
      const started = Date.now();
      const res = await d.post('/v1/kv/pull', pullFrom(p, 500));
      expect(Date.now() - started).toBeLessThan(500 + 2000);
      expect(res).toMatchObject({ ret: 0x5010b01a, ret_name: 'LLM_TIMEOUT', bytes: 0 });
      await until(async () => ((await linkOf(d, p))?.state === 'failed' ? true : undefined), 'the link manager marks the unusable link');
      expect(await linkOf(d, p)).toMatchObject({ state: 'failed', code_name: 'LLM_TIMEOUT' });
      expect((await d.get('/v1/kv/links')).links[0]).toMatchObject({ state: 'unusable' });
      // An unusable link refuses transfers at once until it is unlinked and linked again.
      expect(await d.post('/v1/kv/pull', pullFrom(p, 5000))).toMatchObject({ ret_name: 'LLM_LINK_FAILED' });
      process.kill(p.pid, 'SIGCONT');
      expect((await d.post('/v1/links/unlink', { clusters: [target(p)] })).rets[0].name).toBe('LLM_SUCCESS');
      await until(async () => ((await p.get('/v1/links')).links.length === 0 ? true : undefined), 'P drops the unlinked client');
      await link(d, p);
      expect(await d.post('/v1/kv/pull', pullFrom(p, 10_000))).toMatchObject({ ret: 0, bytes: NBLOCKS * BLOCK });
    },
    TEST_TIMEOUT_MS,
  );
});
