/**
 * The device link port of `pdlink instance` under floods from hostile processes: 1,100 idle data
 * connections, 2,000 unfinished handshakes, and a flood up to the descriptor limit (RLIMIT_NOFILE
 * lowered on the running agent with prlimit). After each, a legitimate D still links and pulls
 * the bytes the agent holds, and the agent's `/v1/status` answers (bound 2 s; latency printed).
 */
import { afterAll, afterEach, describe, expect, test } from 'bun:test';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startPdlink, type PdlinkChild } from './support/child.ts';
import { Peer } from './support/runtime-peer.ts';

const BLOCK = 4096;
const NBLOCKS = 16;
const SECRET = 'cluster-secret-of-the-caps-test-0123';
const TEST_TIMEOUT_MS = 120_000;
const FLOOD = join(import.meta.dir, 'fixtures', 'links', 'flood.ts');
const dir = mkdtempSync(join(tmpdir(), 'pdlink-link-caps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

interface Agent {
  readonly child: PdlinkChild;
  readonly url: string;
  readonly linkPort: number;
}

let configs = 0;
async function startAgent(opts: { secret: boolean; linkPort?: Record<string, number> }): Promise<Agent> {
  const secretFile = join(dir, 'link.secret');
  writeFileSync(secretFile, SECRET, { mode: 0o600 });
  const linkPort = 20000 + Math.floor(Math.random() * 20000);
  const config = join(dir, `agent-${configs++}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      ServerConfig: { ipAddress: '127.0.0.2', managementIpAddress: '127.0.0.2' },
      pdlink: {
        link_base_port: linkPort,
        cluster_id: '1',
        devices: [{ device_logical_id: 0, device_ip: '127.0.0.2' }],
        pool: { threads: 2 },
        ...(opts.secret ? { auth: { link_secret_file: secretFile } } : {}),
        ...(opts.linkPort === undefined ? {} : { link_port: opts.linkPort }),
      },
    }),
  );
  const child = await startPdlink(['instance', '--config', config, '--manage_port', '0'], { listeners: ['management', 'link-0'] });
  cleanups.push(() => child.kill());
  const url = child.urls.management!;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
  };
  await post('/v1/kv/caches', { cache_id: 1, num_blocks: NBLOCKS, block_bytes: BLOCK });
  const data = Buffer.concat(Array.from({ length: NBLOCKS }, (_, b) => pattern(5, b)));
  await post('/v1/kv/write', { cache_id: 1, blocks: Array.from({ length: NBLOCKS }, (_, b) => b), data: data.toString('base64') });
  return { child, url, linkPort };
}

function pattern(seed: number, b: number): Buffer {
  return Buffer.from(Uint8Array.from({ length: BLOCK }, (_, i) => (seed * 131 + b * 31 + i * 7) & 0xff));
}

/** Starts the flood and resolves with its stats once it is in place. */
async function flood(args: Record<string, unknown>): Promise<Record<string, number>> {
  const child: ChildProcess = spawn(process.execPath, [FLOOD, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  for await (const line of createInterface({ input: child.stdout! })) {
    if (line.startsWith('ready ')) return JSON.parse(line.slice(6)) as Record<string, number>;
  }
  throw new Error('the flood exited before it was in place');
}

const addresses = (first: number, n: number) => Array.from({ length: n }, (_, i) => `127.0.0.${first + i}`);

/** A D in its own process links from 127.0.0.3 and pulls two blocks: P's bytes arrive. */
async function legitimatePull(agent: Agent, secret: boolean): Promise<void> {
  const d = new Peer();
  cleanups.push(() => d.kill());
  await d.ok('create', { clusterId: '2', role: 'decoder', sameHost: false, ...(secret ? { secret: SECRET } : {}) });
  await d.ok('register', { cacheId: '2', numBlocks: NBLOCKS, blockBytes: BLOCK });
  const linked = await d.ok('link', {
    clusters: [{ id: '1', ip: '127.0.0.2', port: agent.linkPort, localIp: '127.0.0.3' }],
    timeoutMs: 5000,
  });
  expect(linked).toMatchObject({ ret: 0, rets: [0] });
  await d.ok('pull', {
    remoteClusterId: '1',
    remoteCacheId: '1',
    remoteBlocks: [7, 2],
    localCacheId: '2',
    localBlocks: [0, 1],
    timeoutMs: 5000,
  });
  const got = await d.ok('read', { cacheId: '2', blocks: [0, 1], blockBytes: BLOCK });
  expect(Buffer.from(got['base64'] as string, 'base64').equals(Buffer.concat([pattern(5, 7), pattern(5, 2)]))).toBe(true);
}

/** `/v1/status` answers 200 within the bound; prints the latency. */
async function statusAnswers(agent: Agent, what: string): Promise<void> {
  const started = performance.now();
  const res = await fetch(`${agent.url}/v1/status`, { signal: AbortSignal.timeout(10_000) });
  const ms = performance.now() - started;
  expect(res.status).toBe(200);
  console.log(`link-port caps: /v1/status during ${what}: ${ms.toFixed(1)} ms`);
  expect(ms).toBeLessThan(2000);
}

function threadsOf(pid: number): number {
  return Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

describe('device link port under floods', () => {
  test(
    '1,100 idle data connections cost no thread each and leave a legitimate D able to link and pull',
    async () => {
      const agent = await startAgent({ secret: false });
      const stats = await flood({
        mode: 'idle-data',
        host: '127.0.0.2',
        port: agent.linkPort,
        serverId: '1',
        froms: addresses(10, 5),
        perFrom: 220,
      });
      expect(stats['linked']).toBe(5);
      expect(stats['accepted']! + stats['refused']!).toBe(1100);
      expect(stats['accepted']).toBeGreaterThanOrEqual(1024);
      // A thread per connection would be over a thousand; the serving pool is bounded at 32.
      expect(threadsOf(agent.child.process.pid!)).toBeLessThan(200);
      await statusAnswers(agent, '1,100 idle data connections');
      await legitimatePull(agent, false);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    '2,000 unfinished handshakes leave a legitimate D able to link and pull',
    async () => {
      const agent = await startAgent({ secret: true, linkPort: { handshake_timeout_ms: 60_000 } });
      const stats = await flood({
        mode: 'half-open',
        host: '127.0.0.2',
        port: agent.linkPort,
        serverId: '1',
        froms: addresses(20, 10),
        perFrom: 200,
      });
      expect(stats['accepted']! + stats['refused']!).toBe(2000);
      await statusAnswers(agent, '2,000 unfinished handshakes');
      await legitimatePull(agent, true);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a link flood up to the descriptor limit is refused without stalling; a legitimate D links and pulls',
    async () => {
      const agent = await startAgent({
        secret: true,
        linkPort: { handshake_timeout_ms: 60_000, max_handshakes: 100_000, max_handshakes_per_peer: 100_000 },
      });
      const pid = agent.child.process.pid!;
      const limit = readdirSync(`/proc/${pid}/fd`).length + 200;
      const lowered = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${limit}:${limit}`]);
      expect(lowered.status).toBe(0);
      const stats = await flood({
        mode: 'half-open',
        host: '127.0.0.2',
        port: agent.linkPort,
        serverId: '1',
        froms: addresses(40, 10),
        perFrom: 300,
      });
      expect(stats['accepted']! + stats['refused']!).toBe(3000);
      expect(agent.child.output()).toContain('near the descriptor limit');
      expect(readdirSync(`/proc/${pid}/fd`).length).toBeLessThanOrEqual(limit);
      await statusAnswers(agent, 'a flood at the descriptor limit');
      await legitimatePull(agent, true);
      await statusAnswers(agent, 'a flood at the descriptor limit, after the pull');
    },
    TEST_TIMEOUT_MS,
  );
});
