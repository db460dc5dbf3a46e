import { describe, expect, test } from 'bun:test';
import * as fc from 'fast-check';
import { Packr } from 'msgpackr';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeBatch, KvDecodeError, type StoredEvent } from './events.ts';

/** Batches byte for byte as vLLM publishes them (test/fixtures/kv/vllm_events.py, python3-msgpack). */
const FIXTURES = JSON.parse(
  readFileSync(join(import.meta.dir, '..', '..', 'test', 'fixtures', 'kv', 'vllm-batches.json'), 'utf8'),
) as Record<
  string,
  { payload: string; hashes?: ({ int: string } | { bytes: string })[]; tokens?: number[]; more?: number[]; dp_rank?: number | null }
>;
const bytes = (hex: string): Uint8Array => Uint8Array.from(Buffer.from(hex, 'hex'));
const pair = (words: Uint32Array, i: number): bigint => (BigInt(words[2 * i]!) << 32n) | BigInt(words[2 * i + 1]!);

describe('decodeBatch on vLLM batches', () => {
  for (const name of ['array-int', 'array-bytes', 'map-int', 'map-bytes']) {
    test(`${name}: every event and field`, () => {
      const f = FIXTURES[name]!;
      const batch = decodeBatch(bytes(f.payload));
      expect(batch.ts).toBe(1700000000.25);
      expect(batch.dpRank).toBe(f.dp_rank ?? undefined);
      expect(batch.events.map((e) => e.kind)).toEqual(['stored', 'stored', 'removed', 'cleared']);
      const [first, second] = batch.events as StoredEvent[];
      expect([...first!.tokens]).toEqual(f.tokens!);
      expect(first!.blockSize).toBe(4);
      expect(first!.parent).toBeUndefined();
      expect(first!.medium).toBe('GPU');
      expect([...second!.tokens]).toEqual(f.more!);
      expect([second!.medium, second!.loraName]).toEqual(['CPU', 'sql']);
      const h = f.hashes!;
      if ('int' in h[0]!) {
        // Integers keep all 64 bits, negatives as two's complement.
        const want = h.map((x) => BigInt.asUintN(64, BigInt((x as { int: string }).int)));
        expect([pair(first!.hashes, 0), pair(first!.hashes, 1), pair(second!.hashes, 0)]).toEqual(want);
        expect(pair(second!.parent!, 0)).toBe(want[1]!);
      } else {
        // Bytes become one 64-bit identity each: equal bytes, equal identity.
        expect(pair(second!.parent!, 0)).toBe(pair(first!.hashes, 1));
        expect(new Set([pair(first!.hashes, 0), pair(first!.hashes, 1), pair(second!.hashes, 0)]).size).toBe(3);
      }
      const removed = batch.events[2]!;
      expect(removed.kind === 'removed' && pair(removed.hashes, 0)).toBe(pair(first!.hashes, 0));
    });
  }

  test('fields a newer release appends are skipped; an unknown event is counted, not fatal', () => {
    const batch = decodeBatch(bytes(FIXTURES['array-newer-fields']!.payload));
    expect(batch.events).toHaveLength(1);
    expect(batch.unknownEvents).toBe(1);
    expect(batch.dpRank).toBe(0);
    const e = batch.events[0] as StoredEvent;
    expect([[...e.tokens], e.blockSize, pair(e.hashes, 0)]).toEqual([[1, 2], 2, 7n]);
  });
});

describe('decodeBatch refuses what is not a batch, naming where', () => {
  const packr = new Packr({ useRecords: false, variableMapSize: true });
  const refuse = (payload: Uint8Array, path: string): void => {
    let error: unknown;
    try {
      decodeBatch(payload);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(KvDecodeError);
    expect((error as KvDecodeError).message).toStartWith(path);
  };

  test('truncated anywhere', () => {
    const full = bytes(FIXTURES['map-int']!.payload);
    for (let n = 0; n < full.length; n++) expect(() => decodeBatch(full.subarray(0, n))).toThrow(KvDecodeError);
  });

  test('wrong types', () => {
    refuse(packr.pack('hello'), 'batch');
    refuse(packr.pack([1.5]), 'batch');
    refuse(packr.pack([1.5, 'events']), 'batch.events');
    refuse(packr.pack([1.5, [['BlockStored', ['x'], null, [1], 1, null, 'GPU']]]), 'batch.events[0].block_hashes[0]');
    refuse(packr.pack([1.5, [['BlockStored', [1], null, [-1], 1, null, 'GPU']]]), 'batch.events[0].token_ids[0]');
    refuse(packr.pack([1.5, [['BlockStored', [1], null, [1, 2, 3], 2, null, 'GPU']]]), 'batch.events[0].token_ids');
    refuse(packr.pack([1.5, [['BlockStored', [1], null, [1]]]]), 'batch.events[0].block_size');
    refuse(packr.pack([1.5, [['BlockStored', [1], null, [1], 0, null, 'GPU']]]), 'batch.events[0].block_size');
    refuse(packr.pack([1.5, [{ block_hashes: [1] }]]), 'batch.events[0].type');
    refuse(packr.pack({ ts: 1 }), 'batch.events');
    refuse(packr.pack([1.5, [], 'rank']), 'batch.data_parallel_rank');
    refuse(Uint8Array.of(...packr.pack([1.5, []]), 0), 'batch');
    refuse(Uint8Array.of(0xc1), 'batch');
  });

  test('counts it claims but does not hold are refused before anything is sized by them', () => {
    // An array of 2^32 - 1 token ids in a few bytes.
    const head = packr.pack([1.5, [['BlockStored', [1], null]]]);
    const claim = Uint8Array.of(...head.subarray(0, head.length), 0xdd, 0xff, 0xff, 0xff, 0xff, 1);
    claim[3] = 0x94; // the event array now has 4 fields
    expect(() => decodeBatch(claim)).toThrow(KvDecodeError);
  });
});

describe('decodeBatch reads what msgpackr writes, as msgpackr reads it', () => {
  const hash = fc.oneof(fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }), fc.integer({ min: -1000, max: 1 << 30 }));
  const block = 3;
  const stored = fc.record({
    hashes: fc.array(hash, { minLength: 1, maxLength: 4 }),
    parent: fc.option(hash),
    medium: fc.constantFrom('GPU', 'CPU', null),
  });
  test('every field, both encodings', () => {
    const packr = new Packr({ useRecords: false, variableMapSize: true, useBigIntExtension: false });
    const reader = new Packr({ useRecords: false, int64AsType: 'bigint', mapsAsObjects: true });
    fc.assert(
      fc.property(fc.array(stored, { maxLength: 5 }), fc.boolean(), fc.double({ noNaN: true }), (events, asMap, ts) => {
        const wire = events.map((e, i) => {
          const tokens = Array.from({ length: e.hashes.length * block }, (_, k) => (i * 31 + k) >>> 0);
          const fields = [e.hashes, e.parent, tokens, block, null, e.medium];
          return asMap
            ? {
                type: 'BlockStored',
                block_hashes: e.hashes,
                parent_block_hash: e.parent,
                token_ids: tokens,
                block_size: block,
                lora_id: null,
                medium: e.medium,
              }
            : ['BlockStored', ...fields];
        });
        const payload = packr.pack(asMap ? { ts, events: wire } : [ts, wire]);
        const ours = decodeBatch(payload);
        const theirs = reader.unpack(payload) as unknown;
        const list = (asMap ? (theirs as { events: unknown[] }).events : (theirs as unknown[][])[1]!) as unknown[];
        expect(ours.ts).toBe(asMap ? (theirs as { ts: number }).ts : ((theirs as unknown[])[0] as number));
        expect(ours.events).toHaveLength(list.length);
        list.forEach((raw, i) => {
          const e = ours.events[i] as StoredEvent;
          const r = asMap
            ? (raw as Record<string, unknown>)
            : Object.fromEntries(
                ['type', 'block_hashes', 'parent_block_hash', 'token_ids', 'block_size', 'lora_id', 'medium'].map((k, j) => [
                  k,
                  (raw as unknown[])[j],
                ]),
              );
          const u64 = (v: unknown): bigint => BigInt.asUintN(64, BigInt(v as bigint | number));
          expect((r['block_hashes'] as unknown[]).map(u64)).toEqual(
            Array.from({ length: e.hashes.length / 2 }, (_, k) => pair(e.hashes, k)),
          );
          expect(r['parent_block_hash'] === null ? undefined : u64(r['parent_block_hash'])).toEqual(
            e.parent === undefined ? undefined : pair(e.parent, 0),
          );
          expect((r['token_ids'] as unknown[]).map(Number)).toEqual([...e.tokens]);
          expect(r['medium'] ?? undefined).toEqual(e.medium);
        });
      }),
      { numRuns: 300 },
    );
  });
});
