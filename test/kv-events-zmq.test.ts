/**
 * The KV-event intake against a real libzmq publisher (python3-zmq serving vLLM's frames and replay
 * protocol, test/support/zmq-peer.ts): both encodings and both hash types, a gap filled by replay,
 * one that cannot be, an engine restart, a publisher that vanishes and comes back, and malformed
 * frames and payloads that are counted and skipped while the stream goes on.
 */
import { afterEach, describe, expect, test } from 'bun:test';
import { Packr } from 'msgpackr';
import { KvEventIntake, type PublisherSpec } from '../src/kv-events/intake.ts';
import { MatchResult } from '../src/kv/kv-index.ts';
import { until } from '../src/sim/cluster/process.ts';
import { ZmqPeer } from './support/zmq-peer.ts';

const BS = 4;
const peers: ZmqPeer[] = [];
const intakes: KvEventIntake[] = [];
afterEach(() => {
  intakes.splice(0).forEach((i) => i.close());
  peers.splice(0).forEach((p) => p.stop());
});

async function setup(count = 1): Promise<{ intake: KvEventIntake; peers: ZmqPeer[]; sources: number[] }> {
  const intake = new KvEventIntake({ replayTimeoutMs: 10_000 });
  intakes.push(intake);
  const started = await Promise.all(Array.from({ length: count }, () => ZmqPeer.start()));
  peers.push(...started);
  const sources = await Promise.all(
    started.map(async (peer, i) => {
      const subscribed = peer.nextEvent('subscribed');
      const source = intake.add(spec(`${100 + i}`, peer));
      await subscribed;
      return source;
    }),
  );
  return { intake, peers: started, sources };
}

const spec = (instance: string, peer: ZmqPeer, replay = true): PublisherSpec => ({
  instance,
  dpRank: 0,
  tenant: 'default',
  model: 'm',
  blockSize: BS,
  lora: '',
  salt: '',
  endpoint: peer.pubEndpoint,
  ...(replay ? { replayEndpoint: peer.replayEndpoint } : {}),
  origin: 'conductor',
});

/** Tokens of block b of a shared conversation. */
const block = (b: number): number[] => Array.from({ length: BS }, (_, i) => b * 10 + i);
const prompt = (blocks: number): number[] => Array.from({ length: blocks }, (_, b) => block(b)).flat();

function depthOf(intake: KvEventIntake, source: number, blocks: number): number {
  const keys = new Uint32Array(2 * blocks);
  const n = intake.state.hasher.keys(prompt(blocks), BS, keys);
  const result = new MatchResult();
  intake.state.index.match(intake.state.namespace('m', BS, '', '', false), keys, n, result);
  for (let i = 0; i < result.count; i++) if (result.sources[i] === source) return result.depth[i]!;
  return 0;
}

const settled = (intake: KvEventIntake, source: number, what: () => boolean, label: string): Promise<true> =>
  until(
    async () => (what() ? true : undefined),
    10_000,
    () => `${label}: ${JSON.stringify(intake.subscription(source)?.stats)}`,
  );

describe('KV events from a real libzmq publisher', () => {
  for (const enc of ['array', 'map'] as const) {
    for (const kind of ['int', 'bytes'] as const) {
      test(`${enc} encoding, ${kind} hashes: stored, chained, removed, cleared`, async () => {
        const {
          intake,
          peers: [peer],
          sources: [src],
        } = await setup();
        const stats = intake.subscription(src!)!.stats;
        await peer!.vllm({ enc, kind, events: [['stored', [0, 1], null, [...block(0), ...block(1)], BS]] });
        await peer!.vllm({ enc, kind, events: [['stored', [2], 1, block(2), BS, 'CPU']] });
        await settled(intake, src!, () => stats.applied === 2, 'two batches');
        expect(depthOf(intake, src!, 4)).toBe(3);
        await peer!.vllm({ enc, kind, events: [['removed', [1]]] });
        await settled(intake, src!, () => stats.applied === 3, 'removal');
        expect(depthOf(intake, src!, 4)).toBe(1);
        await peer!.vllm({ enc, kind, events: [['cleared']] });
        await settled(intake, src!, () => stats.applied === 4, 'clear');
        expect([intake.state.index.held, stats.resets.cleared, stats.gaps, stats.malformed]).toEqual([0, 1, 0, 0]);
        expect(stats.blocks).toMatchObject({ stored: 3, removed: 1, orphans: 0 });
      });
    }
  }

  test('a gap is filled from the replay socket; the batch that revealed it is applied once', async () => {
    const {
      intake,
      peers: [peer],
      sources: [src],
    } = await setup();
    const stats = intake.subscription(src!)!.stats;
    await peer!.vllm({ events: [['stored', [0], null, block(0), BS]] });
    await settled(intake, src!, () => stats.applied === 1, 'first');
    await peer!.vllm({ events: [['stored', [1], 0, block(1), BS]], live: false });
    await peer!.vllm({ events: [['stored', [2], 1, block(2), BS]], live: false });
    const replayed = peer!.nextEvent('replayed');
    await peer!.vllm({ events: [['stored', [3], 2, block(3), BS]] });
    expect((await replayed)['from']).toBe(1);
    await settled(intake, src!, () => stats.lastSeq === '3' && intake.subscription(src!)!.replaying === undefined, 'replay');
    expect(depthOf(intake, src!, 5)).toBe(4);
    // The replay brought the live batch that revealed the gap too: the held copy is a duplicate.
    expect([stats.gaps, stats.replayed, stats.duplicates, stats.resets.gap_unfilled]).toEqual([1, 3, 1, 0]);
    expect(stats.applied).toBe(1);
  });

  test('a gap the replay cannot fill drops what the instance held and starts over', async () => {
    const {
      intake,
      peers: [peer],
      sources: [src],
    } = await setup();
    const stats = intake.subscription(src!)!.stats;
    await peer!.vllm({ events: [['stored', [0], null, block(0), BS]] });
    await settled(intake, src!, () => stats.applied === 1, 'first');
    await peer!.vllm({ events: [['removed', [0]]], live: false });
    await peer!.command({ op: 'forget', before: 2 });
    await peer!.vllm({ events: [['stored', [7], null, block(7), BS]] });
    await settled(intake, src!, () => stats.lastSeq === '2' && intake.subscription(src!)!.replaying === undefined, 'unfilled');
    expect(stats.resets.gap_unfilled).toBe(1);
    // Block 0's removal was lost: what it held before is gone, what came after is there.
    expect(depthOf(intake, src!, 1)).toBe(0);
    expect(intake.state.index.held).toBe(1);
  });

  test('an engine restart (sequence back to 0) resets exactly that instance', async () => {
    const {
      intake,
      peers: [a, b],
      sources: [sa, sb],
    } = await setup(2);
    for (const peer of [a!, b!]) {
      await peer.vllm({ events: [['stored', [0, 1], null, prompt(2), BS]] });
      await peer.vllm({ events: [['stored', [2], 1, block(2), BS]] });
    }
    await settled(
      intake,
      sa!,
      () => intake.subscription(sa!)!.stats.applied === 2 && intake.subscription(sb!)!.stats.applied === 2,
      'both',
    );
    await a!.command({ op: 'restart' });
    await a!.vllm({ events: [['stored', [0], null, block(0), BS]] });
    const stats = intake.subscription(sa!)!.stats;
    await settled(intake, sa!, () => stats.resets.restart === 1 && stats.lastSeq === '0', 'restart');
    expect([depthOf(intake, sa!, 3), depthOf(intake, sb!, 3)]).toEqual([1, 3]);
    expect(intake.subscription(sb!)!.stats.resets).toEqual({ restart: 0, gap_unfilled: 0, cleared: 0 });
  });

  test('a publisher that vanishes and comes back is reconnected, and the stream goes on', async () => {
    const {
      intake,
      peers: [peer],
      sources: [src],
    } = await setup();
    const stats = intake.subscription(src!)!.stats;
    await peer!.vllm({ events: [['stored', [0], null, block(0), BS]] });
    await settled(intake, src!, () => stats.applied === 1, 'first');
    await peer!.command({ op: 'unbind' });
    await settled(intake, src!, () => !stats.connected && stats.disconnects === 1, 'disconnect');
    const again = peer!.nextEvent('subscribed');
    await peer!.command({ op: 'rebind' });
    await again;
    await peer!.vllm({ events: [['stored', [1], 0, block(1), BS]] });
    await settled(intake, src!, () => stats.applied === 2, 'after the return');
    expect(stats.connected).toBe(true);
    expect(depthOf(intake, src!, 2)).toBe(2);
  });

  test('malformed frames and payloads are counted and skipped; the subscriber keeps going', async () => {
    const {
      intake,
      peers: [peer],
      sources: [src],
    } = await setup();
    const stats = intake.subscription(src!)!.stats;
    const packr = new Packr({ useRecords: false });
    await peer!.command({ op: 'frames', frames: ['', '0001'] });
    const good = Buffer.from(packr.pack([1.5, [['BlockStored', [5], null, block(0), BS, null, 'GPU']]]));
    await peer!.command({ op: 'payload', hex: good.subarray(0, good.length - 3).toString('hex') });
    await peer!.command({
      op: 'payload',
      hex: Buffer.from(packr.pack([1.5, [['BlockStored', ['x'], null, [1], 1, null, 'GPU']]])).toString('hex'),
    });
    // 10 MB of token ids: over the 8 MiB batch limit.
    const huge = Buffer.from(packr.pack([1.5, [['BlockStored', [6], null, new Array(2_000_000).fill(70000), 2_000_000, null, 'GPU']]]));
    expect(huge.length).toBeGreaterThan(10_000_000);
    await peer!.command({ op: 'payload', hex: huge.toString('hex') });
    await peer!.command({ op: 'payload', hex: good.toString('hex') });
    await settled(intake, src!, () => stats.applied === 1, 'the good batch after the bad ones');
    expect([stats.badFrames, stats.malformed, stats.oversize, stats.gaps]).toEqual([1, 2, 1, 0]);
    expect(stats.lastSeq).toBe('3');
    expect(depthOf(intake, src!, 1)).toBe(1);
  }, 30_000);
});
