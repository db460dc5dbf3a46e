/**
 * The authenticated link handshake across processes: P holds the cluster secret; rogue processes
 * (a runtime context without a secret, or with another one) cannot link, pull or push and leave
 * P's cache as it was, while a D with the secret links and pulls P's bytes. Then the same through
 * `pdlink instance`, whose secret comes from the file its config names (a missing one stops the
 * start with exit 2 naming the key).
 */
import { afterAll, afterEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LLM_STATUS } from '../src/core/llm-status.ts';
import { runPdlink, startPdlink, type PdlinkChild } from './support/child.ts';
import { Peer } from './support/runtime-peer.ts';

const BLOCK = 4096;
const NBLOCKS = 16;
const SECRET = 'cluster-secret-of-the-test-0123456789';
const TEST_TIMEOUT_MS = 60_000;
const dir = mkdtempSync(join(tmpdir(), 'pdlink-links-auth-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const peers: Peer[] = [];
const children: PdlinkChild[] = [];
afterEach(async () => {
  await Promise.all(peers.splice(0).map((p) => p.kill()));
  await Promise.all(children.splice(0).map((c) => c.kill()));
});

function peer(): Peer {
  const p = new Peer();
  peers.push(p);
  return p;
}

function pattern(seed: number, b: number): Buffer {
  return Buffer.from(Uint8Array.from({ length: BLOCK }, (_, i) => (seed * 131 + b * 31 + i * 7) & 0xff));
}

const all = Array.from({ length: NBLOCKS }, (_, b) => b);
const transfer = {
  remoteClusterId: '1',
  remoteCacheId: '1',
  remoteBlocks: [3, 0],
  localCacheId: '2',
  localBlocks: [0, 5],
  timeoutMs: 2000,
};

/** A D process with cache 2 (pattern 9), with the given secret or none. */
async function decoder(clusterId: string, secret: string | undefined): Promise<Peer> {
  const d = peer();
  await d.ok('create', { clusterId, role: 'decoder', sameHost: false, ...(secret === undefined ? {} : { secret }) });
  await d.ok('register', { cacheId: '2', numBlocks: NBLOCKS, blockBytes: BLOCK });
  await d.ok('fill', { cacheId: '2', seed: 9, count: NBLOCKS, blockBytes: BLOCK });
  return d;
}

describe('authenticated device links across processes', () => {
  test(
    'rogue runtimes without the secret or with another cannot link, pull or push; a D with it pulls real bytes',
    async () => {
      const p = peer();
      const { port } = await p.ok('create', { clusterId: '1', role: 'prompt', listenIp: '127.0.0.2', secret: SECRET });
      await p.ok('register', { cacheId: '1', numBlocks: NBLOCKS, blockBytes: BLOCK });
      await p.ok('fill', { cacheId: '1', seed: 5, count: NBLOCKS, blockBytes: BLOCK });
      const linkArgs = { clusters: [{ id: '1', ip: '127.0.0.2', port }], timeoutMs: 3000 };

      for (const [id, secret] of [
        ['66', undefined],
        ['67', 'another-secret-of-16-bytes-or-more'],
      ] as const) {
        const rogue = await decoder(id, secret);
        expect(await rogue.ok('link', linkArgs)).toMatchObject({ ret: LLM_STATUS.LLM_FAILED, rets: [LLM_STATUS.LLM_LINK_FAILED] });
        expect(await rogue.call('pull', transfer)).toMatchObject({ ok: false, code: LLM_STATUS.LLM_NOT_YET_LINK });
        expect(await rogue.call('push', transfer)).toMatchObject({ ok: false, code: LLM_STATUS.LLM_NOT_YET_LINK });
      }
      expect((await p.ok('links'))['links']).toEqual([]);
      const untouched = await p.ok('read', { cacheId: '1', blocks: all, blockBytes: BLOCK });
      expect(Buffer.from(untouched['base64'] as string, 'base64').equals(Buffer.concat(all.map((b) => pattern(5, b))))).toBe(true);

      const d = await decoder('2', SECRET);
      expect(await d.ok('link', linkArgs)).toMatchObject({ ret: 0, rets: [0] });
      await d.ok('pull', transfer);
      const got = await d.ok('read', { cacheId: '2', blocks: [0, 5], blockBytes: BLOCK });
      expect(Buffer.from(got['base64'] as string, 'base64').equals(Buffer.concat([pattern(5, 3), pattern(5, 0)]))).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'pdlink instance takes the secret from pdlink.auth.link_secret_file: a D with it links, one without does not',
    async () => {
      const secretFile = join(dir, 'link.secret');
      writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
      const linkPort = 20000 + Math.floor(Math.random() * 20000);
      const config = join(dir, 'instance.json');
      writeFileSync(
        config,
        JSON.stringify({
          ServerConfig: { ipAddress: '127.0.0.2', managementIpAddress: '127.0.0.2' },
          pdlink: {
            link_base_port: linkPort,
            cluster_id: '1',
            devices: [{ device_logical_id: 0, device_ip: '127.0.0.2' }],
            pool: { threads: 2 },
            auth: { link_secret_file: secretFile },
          },
        }),
      );
      const child = await startPdlink(['instance', '--config', config, '--manage_port', '0'], { listeners: ['management', 'link-0'] });
      children.push(child);
      expect(child.output()).not.toContain(SECRET);
      const linkArgs = { clusters: [{ id: '1', ip: '127.0.0.2', port: linkPort }], timeoutMs: 3000 };
      const rogue = await decoder('66', undefined);
      expect(await rogue.ok('link', linkArgs)).toMatchObject({ rets: [LLM_STATUS.LLM_LINK_FAILED] });
      const d = await decoder('2', SECRET);
      expect(await d.ok('link', linkArgs)).toMatchObject({ ret: 0, rets: [0] });
      const status = await fetch(`${child.urls.management}/v1/links`);
      expect(status.status).toBe(200);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'pdlink sim-engine takes the secret from its config too: a D with it links, one without does not',
    async () => {
      const secretFile = join(dir, 'sim.secret');
      writeFileSync(secretFile, SECRET, { mode: 0o600 });
      const linkPort = 20000 + Math.floor(Math.random() * 20000);
      const config = join(dir, 'sim.json');
      writeFileSync(
        config,
        JSON.stringify({
          pdlink: {
            link_base_port: linkPort,
            cluster_id: '1',
            devices: [{ device_logical_id: 0, device_ip: '127.0.0.2' }],
            auth: { link_secret_file: secretFile },
          },
        }),
      );
      const child = await startPdlink(
        [
          'sim-engine',
          '--role',
          'prefill',
          '--config',
          config,
          '--manage_ip',
          '127.0.0.2',
          '--manage_port',
          '0',
          '--ip',
          '127.0.0.2',
          '--port',
          '0',
        ],
        { listeners: ['management', 'inference'] },
      );
      children.push(child);
      const linkArgs = { clusters: [{ id: '1', ip: '127.0.0.2', port: linkPort }], timeoutMs: 3000 };
      const rogue = await decoder('66', undefined);
      expect(await rogue.ok('link', linkArgs)).toMatchObject({ rets: [LLM_STATUS.LLM_LINK_FAILED] });
      const d = await decoder('2', SECRET);
      expect(await d.ok('link', linkArgs)).toMatchObject({ ret: 0, rets: [0] });
      const missing = join(dir, 'sim-missing.json');
      writeFileSync(missing, JSON.stringify({ pdlink: { auth: { link_secret_file: join(dir, 'nope.secret') } } }));
      const refused = await runPdlink(['sim-engine', '--role', 'prefill', '--config', missing, '--manage_port', '0', '--port', '0']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('pdlink.auth.link_secret_file');
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a named secret file that is missing, empty or too short stops the start with exit 2 naming the key',
    async () => {
      const empty = join(dir, 'empty.secret');
      writeFileSync(empty, '\n');
      const short = join(dir, 'short.secret');
      writeFileSync(short, 'short');
      const config = join(dir, 'missing.json');
      writeFileSync(config, JSON.stringify({ pdlink: { auth: { link_secret_file: join(dir, 'nope.secret') } } }));
      const missing = await runPdlink(['instance', '--config', config, '--manage_port', '0']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('pdlink.auth.link_secret_file');
      for (const [file, why] of [
        [empty, 'is empty'],
        [short, 'must hold 16'],
      ] as const) {
        const r = await runPdlink(['instance', '--manage_port', '0'], { env: { PDLINK_LINK_SECRET_FILE: file } });
        expect(r.code).toBe(2);
        expect(r.stderr).toContain('PDLINK_LINK_SECRET_FILE');
        expect(r.stderr).toContain(why);
      }
    },
    TEST_TIMEOUT_MS,
  );
});
