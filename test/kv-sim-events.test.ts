/**
 * The simulator's KV events, end to end: its prefix cache publishes over ZMTP as vLLM does, pdlink's
 * intake subscribes, and after 10 000 random requests with evictions the index holds exactly what
 * the cache holds and answers every prompt's cached prefix as the cache does (a property test, for
 * both encodings and both hash types). A replay from the simulator's ROUTER fills a gap too.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import * as fc from 'fast-check';
import { KvEventIntake } from '../src/kv-events/intake.ts';
import { MatchResult, MEDIUM_GPU } from '../src/kv/kv-index.ts';
import { blockHashes, PrefixCache } from '../src/sim/engine/kv/prefix-cache.ts';
import { SimKvEvents, type EngineHashKind, type EventEncoding } from '../src/sim/engine/kv/kv-events.ts';
import { until } from '../src/sim/cluster/process.ts';

const BS = 4;
const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup(encoding: EventEncoding, hashes: EngineHashKind, capacity: number) {
  const events = await SimKvEvents.start({ host: '127.0.0.1', port: 0, replayPort: 0, encoding, hashes });
  closers.push(() => events.close());
  const cache = new PrefixCache(capacity);
  cache.listener = events;
  const intake = new KvEventIntake();
  closers.push(() => intake.close());
  const source = intake.add({
    instance: '100',
    dpRank: 0,
    tenant: 'default',
    model: 'sim',
    blockSize: BS,
    lora: '',
    salt: '',
    endpoint: `tcp://127.0.0.1:${events.port}`,
    replayEndpoint: `tcp://127.0.0.1:${events.replayPort}`,
    origin: 'topology',
  });
  const stats = intake.subscription(source)!.stats;
  await until(
    async () => (stats.connected ? true : undefined),
    10_000,
    () => 'subscribed',
  );
  /** Waits until every batch published so far was applied. */
  const caughtUp = () =>
    until(
      async () => {
        events.flush();
        return events.published === 0n || stats.lastSeq === String(events.published - 1n) ? true : undefined;
      },
      30_000,
      () => `applied ${stats.lastSeq} of ${events.published}: ${JSON.stringify(stats)}`,
    );
  return { events, cache, intake, source, stats, caughtUp };
}

/** A random workload's prompts: a few system prompts, conversations growing turn by turn, one-offs. */
function workload(seed: number, requests: number): number[][] {
  let x = seed | 1;
  const rand = (n: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
  const systems = Array.from({ length: 4 }, (_, s) => Array.from({ length: 3 * BS }, (_, i) => 1000 * (s + 1) + i));
  const conversations: number[][] = [];
  const out: number[][] = [];
  for (let r = 0; r < requests; r++) {
    const kind = rand(10);
    if (kind < 6 && conversations.length > 0) {
      const c = conversations[rand(conversations.length)]!;
      for (let t = rand(3 * BS) + 1; t > 0; t--) c.push(rand(30000));
      out.push([...c]);
    } else if (kind < 9) {
      const c = [...systems[rand(systems.length)]!, ...Array.from({ length: rand(4 * BS) + 1 }, () => rand(30000))];
      conversations.push(c);
      if (conversations.length > 40) conversations.shift();
      out.push([...c]);
    } else out.push(Array.from({ length: rand(6 * BS) + 1 }, () => rand(30000)));
  }
  return out;
}

function engineWords(hash: string, kind: EngineHashKind, intake: KvEventIntake): [number, number] | undefined {
  if (kind === 'bytes') return undefined;
  const at = hash.indexOf(':');
  return [parseInt(hash.slice(0, at), 16) >>> 0, parseInt(hash.slice(at + 1), 16) >>> 0];
}

describe("the index against the simulator's cache", () => {
  for (const [encoding, kind] of [
    ['array', 'int'],
    ['map', 'bytes'],
    ['array', 'bytes'],
    ['map', 'int'],
  ] as const) {
    test(`${encoding} encoding, ${kind} hashes: 10 000 random requests with evictions`, async () => {
      const run = await setup(encoding, kind, 300);
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (seed) => {
          const prompts = workload(seed, 10_000);
          for (let i = 0; i < prompts.length; i++) {
            if (i % 2 === 0) run.cache.admit(prompts[i]!, BS);
            else run.cache.hold(prompts[i]!, BS);
            // Let batches go out as the engine's steps would.
            if (i % 500 === 499) await run.caughtUp();
          }
          await run.caughtUp();
          const index = run.intake.state.index;
          expect(index.held).toBe(run.cache.stats().blocks);
          if (kind === 'int') {
            const out = new Uint32Array(2);
            for (const hash of run.cache.held()) {
              const [hi, lo] = engineWords(hash, kind, run.intake)!;
              expect(index.keyOf(run.source, MEDIUM_GPU, hi, lo, out, 0)).toBeGreaterThanOrEqual(0);
            }
          }
          // Every prompt's cached prefix, as the cache counts it, is what the index matches.
          const state = run.intake.state;
          const ns = state.namespace('sim', BS, '', '', false);
          const result = new MatchResult();
          for (const prompt of prompts.slice(-300)) {
            const keys = new Uint32Array(2 * prompt.length);
            const n = state.hasher.keys(prompt, BS, keys);
            state.index.match(ns, keys, n, result);
            const depth = result.count === 0 ? 0 : result.depth[0]!;
            expect(depth).toBe(run.cache.peek(blockHashes(prompt, BS)));
          }
          expect(run.stats.blocks.orphans + run.stats.gaps + run.stats.malformed).toBe(0);
          // The next run starts from an empty cache, as after a reset.
          run.cache.clear();
          await run.caughtUp();
          expect(index.held).toBe(0);
        }),
        { numRuns: 2 },
      );
    }, 120_000);
  }

  test('a subscriber that missed batches gets them from the replay socket', async () => {
    const run = await setup('array', 'int', 1000);
    run.cache.admit(
      Array.from({ length: 3 * BS }, (_, i) => i),
      BS,
    );
    await run.caughtUp();
    // A second intake joins late: its first batch is a gap from 0, filled by replay.
    const late = new KvEventIntake();
    closers.push(() => late.close());
    const source = late.add({
      instance: '100',
      dpRank: 0,
      tenant: 'default',
      model: 'sim',
      blockSize: BS,
      lora: '',
      salt: '',
      endpoint: `tcp://127.0.0.1:${run.events.port}`,
      replayEndpoint: `tcp://127.0.0.1:${run.events.replayPort}`,
      origin: 'topology',
    });
    const stats = late.subscription(source)!.stats;
    await until(
      async () => (stats.connected ? true : undefined),
      10_000,
      () => 'late subscriber connected',
    );
    run.cache.admit(
      Array.from({ length: 5 * BS }, (_, i) => i),
      BS,
    );
    run.events.flush();
    await until(
      async () => (stats.lastSeq === '1' && late.subscription(source)!.replaying === undefined ? true : undefined),
      10_000,
      () => JSON.stringify(stats),
    );
    expect([stats.gaps, stats.replayed, late.state.index.held]).toEqual([1, 2, 5]);
  });
});
