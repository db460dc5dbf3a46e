/**
 * A set of records stored in pieces that fit etcd at any size: records (one JSON text per id) go
 * into a fixed number of buckets by a hash of their id; each bucket is compressed and stored under a
 * key named by its content's hash, cut into parts when it would pass a request's size limit; one
 * manifest names every bucket's parts and the content hash. A write puts only the buckets whose
 * content changed (new names, so the stored set is untouched until then), then switches the
 * manifest in one transaction that also deletes the buckets it no longer names. A reader takes the
 * manifest and every part it names from one read of the prefix and checks each bucket's hash: the
 * set is complete or it is not used at all.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { deflateRaw, inflateRaw } from 'node:zlib';

const deflate = promisify(deflateRaw);
const inflate = promisify(inflateRaw);

/** Buckets of a record set: a change to one record rewrites about 1/64 of the set. */
export const BUCKETS = 64;
/** Largest stored part (base64 text), well inside etcd's default 1.5 MiB request limit. */
export const MAX_PART_BYTES = 512 * 1024;
/** The manifest's own key under the set's prefix. */
export const MANIFEST = 'manifest';
const FORMAT = 1;

interface BucketRef {
  readonly bucket: number;
  /** sha-256 (hex, 32 characters) of the bucket's JSON text. */
  readonly sha: string;
  readonly count: number;
  readonly parts: readonly string[];
}

interface Manifest {
  readonly format: number;
  readonly meta: unknown;
  readonly buckets: readonly BucketRef[];
}

/** What one write of the set puts and deletes; `manifest` goes last, in the transaction that deletes. */
export interface ChunkedWrite {
  readonly parts: ReadonlyMap<string, string>;
  /** Every bucket's JSON text, by bucket (what the next write compares with). */
  readonly texts: ReadonlyMap<number, string>;
  readonly manifest: string;
  readonly obsolete: readonly string[];
  /** Bytes put (parts and manifest). */
  readonly bytes: number;
}

export type ChunkedRead = { ok: true; records: unknown[]; meta: unknown } | { ok: false; reason: string };

/**
 * The bucket of a record id (ids are integers up to 2^53; both halves are mixed).
 * @example bucketOf(4096) // a number in [0, 64)
 */
export function bucketOf(id: number): number {
  let h = Math.imul((id >>> 0) ^ Math.floor(id / 2 ** 32), 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85ebca77);
  h ^= h >>> 13;
  return (h >>> 0) % BUCKETS;
}

/** Writes a record set under `prefix` (relative keys) and remembers what it stored, to write only changes. */
export class ChunkedWriter {
  readonly #prefix: string;
  /** bucket → the stored ref, as of the last committed manifest, and its text when this writer wrote it. */
  #stored = new Map<number, BucketRef>();
  #storedTexts = new Map<number, string>();
  /** Keys found under the prefix that no manifest names (a write that failed halfway). */
  #strays = new Set<string>();

  /** @example const writer = new ChunkedWriter('controller/state/'); */
  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  /**
   * Adopts what a read found stored (so unchanged buckets are not written again) and the keys no
   * manifest names (deleted by the next write).
   * @example writer.adopt(await store.list('controller/state/'));
   */
  adopt(listed: ReadonlyMap<string, string>): void {
    const manifest = parseManifest(listed.get(this.#prefix + MANIFEST));
    this.#stored = new Map((manifest?.buckets ?? []).map((b) => [b.bucket, b]));
    this.#storedTexts = new Map();
    const named = new Set([this.#prefix + MANIFEST, ...[...this.#stored.values()].flatMap((b) => b.parts)]);
    this.#strays = new Set([...listed.keys()].filter((k) => !named.has(k)));
  }

  /** Nothing is known to be stored (after a failed write): the next write writes every bucket. */
  forget(): void {
    this.#strays = new Set([...this.#strays, ...[...this.#stored.values()].flatMap((b) => b.parts)]);
    this.#stored = new Map();
    this.#storedTexts = new Map();
  }

  /**
   * The write that stores `records` (id → JSON text) and `meta`; undefined when nothing changed.
   * @example const write = await writer.prepare(records, { generation: 3 });
   */
  async prepare(records: ReadonlyMap<number, string>, meta: unknown): Promise<ChunkedWrite | undefined> {
    const byBucket = new Map<number, { id: number; text: string }[]>();
    for (const [id, text] of records) {
      const b = bucketOf(id);
      let list = byBucket.get(b);
      if (list === undefined) byBucket.set(b, (list = []));
      list.push({ id, text });
    }
    const refs: BucketRef[] = [];
    const parts = new Map<string, string>();
    const texts = new Map<number, string>();
    let bytes = 0;
    for (const [bucket, list] of [...byBucket].sort((a, b) => a[0] - b[0])) {
      list.sort((a, b) => a.id - b.id);
      const text = `[${list.map((r) => r.text).join(',')}]`;
      texts.set(bucket, text);
      const stored = this.#stored.get(bucket);
      // Comparing with the text written last is cheaper than hashing every bucket every time.
      if (stored !== undefined && this.#storedTexts.get(bucket) === text) {
        refs.push(stored);
        continue;
      }
      const sha = createHash('sha256').update(text).digest('hex').slice(0, 32);
      if (stored?.sha === sha) {
        refs.push(stored);
        continue;
      }
      const packed = (await deflate(Buffer.from(text))).toString('base64');
      const names: string[] = [];
      for (let i = 0, at = 0; at < packed.length || i === 0; i++, at += MAX_PART_BYTES) {
        const name = `${this.#prefix}b${bucket}-${sha}-${i}`;
        parts.set(name, packed.slice(at, at + MAX_PART_BYTES));
        names.push(name);
      }
      bytes += packed.length;
      refs.push({ bucket, sha, count: list.length, parts: names });
    }
    // The meta alone (a generation count) is written with the next change of a record.
    if (parts.size === 0 && refs.length === this.#stored.size && this.#strays.size === 0) {
      this.#storedTexts = texts;
      return undefined;
    }
    const manifest = JSON.stringify({ format: FORMAT, meta, buckets: refs } satisfies Manifest);
    const kept = new Set(refs.flatMap((r) => r.parts));
    const obsolete = [...[...this.#stored.values()].flatMap((b) => b.parts), ...this.#strays].filter((k) => !kept.has(k));
    return { parts, texts, manifest, obsolete: [...new Set(obsolete)], bytes: bytes + manifest.length };
  }

  /** `write` is stored (its manifest committed, the obsolete keys it names deleted or to be deleted). */
  committed(write: ChunkedWrite, deleted: readonly string[]): void {
    const manifest = parseManifest(write.manifest)!;
    this.#stored = new Map(manifest.buckets.map((b) => [b.bucket, b]));
    this.#storedTexts = new Map(write.texts);
    const gone = new Set(deleted);
    this.#strays = new Set(write.obsolete.filter((k) => !gone.has(k)));
  }
}

/**
 * Reads a record set from one listing of its prefix; not ok (with the reason) unless the manifest
 * and every part it names are there and every bucket's content matches its hash.
 * @example const read = await readChunked(await store.list('controller/state/'), 'controller/state/');
 */
export async function readChunked(listed: ReadonlyMap<string, string>, prefix: string): Promise<ChunkedRead> {
  const text = listed.get(prefix + MANIFEST);
  if (text === undefined) return { ok: false, reason: 'no manifest is stored' };
  const manifest = parseManifest(text);
  if (manifest === undefined) return { ok: false, reason: 'the manifest does not parse' };
  const records: unknown[] = [];
  for (const ref of manifest.buckets) {
    const packed: string[] = [];
    for (const part of ref.parts) {
      const value = listed.get(part);
      if (value === undefined) return { ok: false, reason: `${part} is missing` };
      packed.push(value);
    }
    let json: string;
    try {
      json = (await inflate(Buffer.from(packed.join(''), 'base64'))).toString();
    } catch {
      return { ok: false, reason: `bucket ${ref.bucket} does not decompress` };
    }
    if (createHash('sha256').update(json).digest('hex').slice(0, 32) !== ref.sha) {
      return { ok: false, reason: `bucket ${ref.bucket} does not match its hash` };
    }
    const list: unknown = JSON.parse(json);
    if (!Array.isArray(list) || list.length !== ref.count) return { ok: false, reason: `bucket ${ref.bucket} holds the wrong records` };
    records.push(...list);
  }
  return { ok: true, records, meta: manifest.meta };
}

function parseManifest(text: string | undefined): Manifest | undefined {
  if (text === undefined) return undefined;
  try {
    const m = JSON.parse(text) as Partial<Manifest>;
    if (m.format !== FORMAT || !Array.isArray(m.buckets)) return undefined;
    const ok = m.buckets.every(
      (b) =>
        Number.isInteger(b?.bucket) &&
        typeof b?.sha === 'string' &&
        Number.isInteger(b?.count) &&
        Array.isArray(b?.parts) &&
        b.parts.every((p: unknown) => typeof p === 'string'),
    );
    return ok ? (m as Manifest) : undefined;
  } catch {
    return undefined;
  }
}
