import { describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { BUCKETS, bucketOf, ChunkedWriter, MANIFEST, MAX_PART_BYTES, readChunked, type ChunkedWrite } from './chunked.ts';

const PREFIX = 'controller/state/';

/** What a store holds after `write` is committed over `stored` (the obsolete keys deleted). */
function apply(stored: Map<string, string>, write: ChunkedWrite): Map<string, string> {
  const next = new Map(stored);
  for (const [k, v] of write.parts) next.set(k, v);
  next.set(PREFIX + MANIFEST, write.manifest);
  for (const k of write.obsolete) next.delete(k);
  return next;
}

/** An instance record about the size the controller stores at production shape: 8 devices, a 100-character model name. */
function record(id: number, model: string): string {
  const devices = Array.from({ length: 8 }, (_, d) => ({ logicalId: String(d), ip: `10.${id >> 8}.${id & 255}.${d + 1}` }));
  return JSON.stringify({
    id,
    spec: {
      id,
      manageUrl: `http://10.1.${id >> 8}.${id & 255}:2000`,
      inferenceUrl: `http://10.1.${id >> 8}.${id & 255}:3000`,
      modelName: model,
      serverIp: `10.1.${id >> 8}.${id & 255}`,
      devices,
      role: undefined,
      staticInfo: { maxSeqLen: 32768, maxOutputLen: 4096, totalSlots: 256, totalBlocks: 8192, blockSize: 128 },
    },
    file: 'same',
    role: id % 2 === 0 ? 'prefill' : 'decode',
    group: id >> 4,
    joined: true,
    posted: 'f'.repeat(32),
    snapshot: {
      id,
      ip: `10.1.${id >> 8}.${id & 255}`,
      port: '3000',
      metric_port: '2000',
      model_name: model,
      static_info: {
        group_id: id >> 4,
        max_seq_len: 32768,
        max_output_len: 4096,
        total_slots_num: 256,
        total_block_num: 8192,
        block_size: 128,
        label: 2,
        role: 80,
      },
      dynamic_info: { avail_slots_num: 256, avail_block_num: 8192, peers: [id ^ 1] },
    },
  });
}

describe('chunked record sets', () => {
  test('ids spread over every bucket, the same id always in the same one', () => {
    const counts = new Array<number>(BUCKETS).fill(0);
    for (let id = 0; id < 4096; id++) counts[bucketOf(id * 64)]! += 1;
    expect(Math.min(...counts)).toBeGreaterThan(20);
    expect(bucketOf(2 ** 53 - 1)).toBe(bucketOf(2 ** 53 - 1));
    expect(bucketOf(2 ** 40 + 7)).not.toBe(bucketOf(7));
  });

  test('4096 instances with 8 devices and 100-character model names: every piece fits a request, and the set reads back exactly', async () => {
    const model = 'm'.repeat(100);
    const records = new Map(Array.from({ length: 4096 }, (_, i) => [i + 1, record(i + 1, model)]));
    const writer = new ChunkedWriter(PREFIX);
    const write = (await writer.prepare(records, { generation: 12 }))!;
    for (const value of write.parts.values()) expect(value.length).toBeLessThanOrEqual(MAX_PART_BYTES);
    expect(write.manifest.length).toBeLessThan(64 * 1024);
    const stored = apply(new Map(), write);
    const read = await readChunked(stored, PREFIX);
    if (!read.ok) throw new Error(read.reason);
    expect(read.meta).toEqual({ generation: 12 });
    const back = read.records.map((r) => JSON.stringify(r)).sort();
    expect(back).toEqual([...records.values()].map((r) => JSON.stringify(JSON.parse(r))).sort());
    const raw = [...records.values()].reduce((n, r) => n + r.length, 0);
    console.log(
      `4096 records: ${(raw / 1e6).toFixed(2)} MB of JSON stored as ${write.parts.size} parts, ${(write.bytes / 1e6).toFixed(2)} MB`,
    );
  });

  test('incompressible records are cut into parts that each fit', async () => {
    // Eight ids of one bucket, each with 200 KB of noise: one bucket far past a part's size.
    const ids: number[] = [];
    for (let id = 0; ids.length < 8; id++) if (bucketOf(id) === 0) ids.push(id);
    const records = new Map(ids.map((id) => [id, JSON.stringify({ id, noise: randomBytes(200_000).toString('base64') })]));
    const write = (await new ChunkedWriter(PREFIX).prepare(records, {}))!;
    for (const value of write.parts.values()) expect(value.length).toBeLessThanOrEqual(MAX_PART_BYTES);
    expect(write.parts.size).toBeGreaterThan(2);
    const read = await readChunked(apply(new Map(), write), PREFIX);
    expect(read.ok && read.records.length).toBe(8);
  });

  test('a change to one record writes only its bucket; nothing changed writes nothing; the old piece goes with the manifest', async () => {
    const records = new Map(Array.from({ length: 1000 }, (_, i) => [i, record(i, 'm')]));
    const writer = new ChunkedWriter(PREFIX);
    const first = (await writer.prepare(records, { generation: 1 }))!;
    let stored = apply(new Map(), first);
    writer.committed(first, first.obsolete);
    expect(await writer.prepare(records, { generation: 2 })).toBeUndefined();
    records.set(7, record(7, 'another model'));
    const second = (await writer.prepare(records, { generation: 3 }))!;
    expect(second.parts.size).toBe(1);
    expect(second.obsolete.length).toBe(1);
    expect(first.parts.has(second.obsolete[0]!)).toBe(true);
    stored = apply(stored, second);
    writer.committed(second, second.obsolete);
    const read = await readChunked(stored, PREFIX);
    expect(read.ok && read.records.find((r) => (r as { id: number }).id === 7)).toMatchObject({ spec: { modelName: 'another model' } });
    expect(read.ok && read.meta).toEqual({ generation: 3 });
  });

  test('a writer that adopts what a reader found writes only what differs, and deletes pieces no manifest names', async () => {
    const records = new Map(Array.from({ length: 200 }, (_, i) => [i, record(i, 'm')]));
    const first = (await new ChunkedWriter(PREFIX).prepare(records, {}))!;
    const stored = apply(new Map(), first);
    stored.set(`${PREFIX}b3-${'0'.repeat(32)}-0`, 'a piece a failed write left');
    const next = new ChunkedWriter(PREFIX);
    next.adopt(stored);
    const write = (await next.prepare(records, {}))!;
    expect(write.parts.size).toBe(0);
    expect(write.obsolete).toEqual([`${PREFIX}b3-${'0'.repeat(32)}-0`]);
  });

  test('a set with a piece missing, altered, or no manifest is not read at all', async () => {
    const records = new Map(Array.from({ length: 300 }, (_, i) => [i, record(i, 'm')]));
    const write = (await new ChunkedWriter(PREFIX).prepare(records, {}))!;
    const stored = apply(new Map(), write);
    const [somePart, value] = [...write.parts][0]!;
    const missing = new Map(stored);
    missing.delete(somePart);
    expect(await readChunked(missing, PREFIX)).toEqual({ ok: false, reason: `${somePart} is missing` });
    const other = (await new ChunkedWriter(PREFIX).prepare(new Map([[1, '{"id":1}']]), {}))!;
    const altered = new Map(stored);
    altered.set(somePart, [...other.parts.values()][0]!);
    expect((await readChunked(altered, PREFIX)).ok).toBe(false);
    const garbled = new Map(stored);
    garbled.set(somePart, value.slice(0, 100));
    expect((await readChunked(garbled, PREFIX)).ok).toBe(false);
    const noManifest = new Map(stored);
    noManifest.delete(PREFIX + MANIFEST);
    expect(await readChunked(noManifest, PREFIX)).toEqual({ ok: false, reason: 'no manifest is stored' });
  });
});
