/**
 * Routing on the engines' KV events, on Deno as on Bun: XXH3 and the block keys against the
 * reference's outputs, vLLM's batches decoded in both encodings and hash types, the intake against a
 * real libzmq publisher (python3-zmq) with a gap filled by replay and an engine restart, the
 * simulator's own publisher feeding an index that ends as its cache is, the tokenizer files, and the
 * Conductor API of a Coordinator built on Deno.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCoordinator } from '../../src/apps/coordinator.ts';
import { KvEventIntake, type PublisherSpec } from '../../src/kv-events/intake.ts';
import { BlockHasher, keyHex } from '../../src/kv/block-keys.ts';
import { decodeBatch, type StoredEvent } from '../../src/kv/events.ts';
import { MatchResult } from '../../src/kv/kv-index.ts';
import { xxh3Words } from '../../src/kv/xxh3.ts';
import { SimKvEvents } from '../../src/sim/engine/kv/kv-events.ts';
import { blockHashes, PrefixCache } from '../../src/sim/engine/kv/prefix-cache.ts';
import { until } from '../../src/sim/cluster/process.ts';
import { writeWordTokenizer } from '../../src/sim/engine/model/word-tokenizer.ts';
import { Tokenizers } from '../../src/tokenizer/tokenizers.ts';
import { ZmqPeer } from '../support/zmq-peer.ts';
import { REPO_ROOT } from './support.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'kv');

Deno.test("XXH3 and the rolling block keys are the reference implementation's", () => {
  const v = JSON.parse(readFileSync(join(FIXTURES, 'xxh3-vectors.json'), 'utf8')) as {
    seeds: string[];
    lengths: number[];
    hashes: string[][];
    rolling: { tokens: number; block_size: number; keys: string[] };
  };
  const data = new Uint32Array(Uint8Array.from({ length: 5000 }, (_, i) => (i * 131 + 7) % 251).buffer);
  const out = new Uint32Array(2);
  v.seeds.forEach((seed, s) =>
    v.lengths.forEach((len, i) => {
      xxh3Words(data, 0, len / 4, parseInt(seed.slice(0, 8), 16), parseInt(seed.slice(8), 16), out, 0);
      assert.equal(keyHex(out, 0), v.hashes[s]![i], `len ${len} seed ${seed}`);
    }),
  );
  const keys = new Uint32Array(64);
  const n = new BlockHasher().keys(
    Array.from({ length: v.rolling.tokens }, (_, i) => i),
    v.rolling.block_size,
    keys,
  );
  assert.deepEqual(
    Array.from({ length: n }, (_, i) => keyHex(keys, 2 * i)),
    v.rolling.keys,
  );
});

Deno.test("vLLM's batches decode in both encodings and both hash types", () => {
  const fixtures = JSON.parse(readFileSync(join(FIXTURES, 'vllm-batches.json'), 'utf8')) as Record<
    string,
    { payload: string; tokens?: number[] }
  >;
  for (const name of ['array-int', 'array-bytes', 'map-int', 'map-bytes']) {
    const batch = decodeBatch(Uint8Array.from(Buffer.from(fixtures[name]!.payload, 'hex')));
    assert.deepEqual(
      batch.events.map((e) => e.kind),
      ['stored', 'stored', 'removed', 'cleared'],
      name,
    );
    assert.deepEqual([...(batch.events[0] as StoredEvent).tokens], fixtures[name]!.tokens);
  }
});

const spec = (instance: string, endpoint: string, replay: string): PublisherSpec => ({
  instance,
  dpRank: 0,
  tenant: 'default',
  model: 'm',
  blockSize: 4,
  lora: '',
  salt: '',
  endpoint,
  replayEndpoint: replay,
  origin: 'conductor',
});
const block = (b: number): number[] => [0, 1, 2, 3].map((i) => b * 10 + i);

Deno.test('the intake against a real libzmq publisher: a gap filled by replay, then a restart', async () => {
  const peer = await ZmqPeer.start();
  const intake = new KvEventIntake();
  try {
    const subscribed = peer.nextEvent('subscribed');
    const source = intake.add(spec('1', peer.pubEndpoint, peer.replayEndpoint));
    await subscribed;
    const stats = intake.subscription(source)!.stats;
    for (const enc of ['array', 'map']) {
      await peer.vllm({ enc, kind: enc === 'map' ? 'bytes' : 'int', events: [['stored', [0], null, block(0), 4]] });
    }
    await until(
      async () => (stats.applied === 2 ? true : undefined),
      10_000,
      () => JSON.stringify(stats),
    );
    await peer.vllm({ events: [['stored', [1], 0, block(1), 4]], live: false });
    await peer.vllm({ events: [['stored', [2], 1, block(2), 4]] });
    await until(
      async () => (stats.lastSeq === '3' && intake.subscription(source)!.replaying === undefined ? true : undefined),
      10_000,
      () => JSON.stringify(stats),
    );
    assert.equal(stats.gaps, 1);
    await peer.command({ op: 'restart' });
    await peer.vllm({ events: [['stored', [0], null, block(0), 4]] });
    await until(
      async () => (stats.resets.restart === 1 && stats.lastSeq === '0' ? true : undefined),
      10_000,
      () => JSON.stringify(stats),
    );
    assert.equal(intake.state.index.held, 1);
  } finally {
    intake.close();
    peer.stop();
  }
});

Deno.test("the simulator's publisher feeds an index that ends as the cache is", async () => {
  const events = await SimKvEvents.start({ host: '127.0.0.1', port: 0, replayPort: 0, encoding: 'map', hashes: 'bytes' });
  const cache = new PrefixCache(100);
  cache.listener = events;
  const intake = new KvEventIntake();
  try {
    const source = intake.add(spec('100', `tcp://127.0.0.1:${events.port}`, `tcp://127.0.0.1:${events.replayPort}`));
    const stats = intake.subscription(source)!.stats;
    await until(
      async () => (stats.connected ? true : undefined),
      10_000,
      () => 'connected',
    );
    let x = 7;
    const prompts = Array.from({ length: 2000 }, () => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return [...block(x % 5), ...Array.from({ length: 4 * (1 + (x % 4)) }, (_, i) => ((x >>> 8) % 997) + i)];
    });
    for (const p of prompts) cache.admit(p, 4);
    events.flush();
    await until(
      async () => (stats.lastSeq === String(events.published - 1n) ? true : undefined),
      20_000,
      () => JSON.stringify(stats),
    );
    assert.equal(intake.state.index.held, cache.stats().blocks);
    const result = new MatchResult();
    const keys = new Uint32Array(64);
    for (const p of prompts.slice(-50)) {
      const n = intake.state.hasher.keys(p, 4, keys);
      intake.state.index.match(intake.state.namespace('m', 4, '', '', false), keys, n, result);
      assert.equal(result.count === 0 ? 0 : result.depth[0], cache.peek(blockHashes(p, 4)));
    }
  } finally {
    intake.close();
    await events.close();
  }
});

Deno.test('tokenizer files load and tokenize; the Conductor API answers on a Coordinator built on Deno', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-deno-kv-'));
  const coordinator = createCoordinator({});
  try {
    const tokenizers = new Tokenizers({ m: writeWordTokenizer(dir) });
    assert.deepEqual(tokenizers.prompt('completions', { model: 'm', prompt: 'aaa aab' }), [1, 7, 8]);
    const post = (path: string, body: unknown) =>
      coordinator.managementFetch(
        new Request(`http://c${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      );
    const registered = await post('/register', {
      endpoint: 'tcp://127.0.0.1:9',
      type: 'SGLang',
      modelname: 'm',
      instance_id: 'x',
      block_size: 4,
      dp_rank: 0,
    });
    assert.equal(registered.status, 200);
    const query = await post('/query', { model: 'm', token_ids: block(0), block_size: 4 });
    assert.deepEqual(await query.json(), { default: { x: { longest_matched: 0, GPU: 0, CPU: 0, DP: { '0': 0 } } } });
    assert.equal((await post('/query', { model: 'm', token_ids: 'no', block_size: 4 })).status, 422);
  } finally {
    await coordinator.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
