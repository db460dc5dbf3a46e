/**
 * Decodes one KV-event batch as vLLM (and SGLang, which copies it) publishes it: a msgpack payload
 * `EventBatch{ts, events, data_parallel_rank?}` whose events are tagged `BlockStored`,
 * `BlockRemoved` or `AllBlocksCleared`. vLLM's releases encode structs as arrays, tag first
 * (msgspec `array_like`); its newest code as maps with a `type` tag; both are read. Block hashes are
 * integers (older engines) or bytes (newer): either becomes a 64-bit (hi, lo) identity (bytes
 * through XXH3 of their words, seeded with their length). Fields a release adds after the ones read
 * here are skipped; an event type this code does not know is skipped and counted, never fatal.
 */
import { KvDecodeError, MsgCursor } from './msgpack-cursor.ts';
import { xxh3Words } from './xxh3.ts';

export { KvDecodeError } from './msgpack-cursor.ts';

export interface StoredEvent {
  readonly kind: 'stored';
  /** The engine's hashes of the blocks, (hi, lo) per block. */
  readonly hashes: Uint32Array;
  /** The engine's hash of the block before the first one (hi, lo), or undefined at a root. */
  readonly parent: Uint32Array | undefined;
  /** Token ids of all the blocks, `blockSize` per block. */
  readonly tokens: Uint32Array;
  readonly blockSize: number;
  readonly medium: string | undefined;
  readonly loraId: number | undefined;
  readonly loraName: string | undefined;
}

export interface RemovedEvent {
  readonly kind: 'removed';
  readonly hashes: Uint32Array;
  readonly medium: string | undefined;
}

export interface ClearedEvent {
  readonly kind: 'cleared';
}

export type KvEvent = StoredEvent | RemovedEvent | ClearedEvent;

export interface EventBatch {
  readonly ts: number;
  readonly events: readonly KvEvent[];
  readonly dpRank: number | undefined;
  /** Events of a type this decoder does not know, skipped. */
  readonly unknownEvents: number;
}

/** Most blocks in one event, and tokens in one BlockStored, read before a payload is refused. */
export const MAX_EVENT_BLOCKS = 1 << 16;
export const MAX_EVENT_TOKENS = 1 << 22;

/**
 * Decodes a batch payload.
 * @throws KvDecodeError naming the field and what is wrong with it.
 * @example const batch = decodeBatch(frames[2]); for (const e of batch.events) ...
 */
export function decodeBatch(payload: Uint8Array): EventBatch {
  const c = new MsgCursor(payload);
  let ts = 0;
  let dpRank: number | undefined;
  const events: KvEvent[] = [];
  const counter = { unknown: 0 };
  if (c.peek('batch') === 'array') {
    const n = c.arrayLength('batch');
    if (n < 2) throw new KvDecodeError('batch', `has ${n} fields, needs ts and events`);
    ts = c.number('batch.ts');
    readEvents(c, events, counter);
    if (n >= 3) dpRank = optionalU32(c, 'batch.data_parallel_rank');
    for (let i = 3; i < n; i++) c.skip('batch');
  } else {
    const n = c.mapLength('batch');
    let sawEvents = false;
    for (let i = 0; i < n; i++) {
      const key = c.peek('batch key') === 'str' ? c.str('batch key') : (c.skip('batch key'), '');
      if (key === 'ts') ts = c.number('batch.ts');
      else if (key === 'events') {
        readEvents(c, events, counter);
        sawEvents = true;
      } else if (key === 'data_parallel_rank') dpRank = optionalU32(c, 'batch.data_parallel_rank');
      else c.skip(`batch.${key}`);
    }
    if (!sawEvents) throw new KvDecodeError('batch.events', 'missing');
  }
  if (c.remaining !== 0) throw new KvDecodeError('batch', `${c.remaining} bytes after the batch`);
  return { ts, events, dpRank, unknownEvents: counter.unknown };
}

function readEvents(c: MsgCursor, into: KvEvent[], counter: { unknown: number }): void {
  const n = c.arrayLength('batch.events');
  c.fits(n, 1, 'batch.events');
  for (let i = 0; i < n; i++) {
    const event = readEvent(c, `batch.events[${i}]`);
    if (event === undefined) counter.unknown++;
    else into.push(event);
  }
}

/** Field order of the array encoding, after the tag (vLLM appends new fields at the end). */
const STORED_FIELDS = ['block_hashes', 'parent_block_hash', 'token_ids', 'block_size', 'lora_id', 'medium', 'lora_name'] as const;
const REMOVED_FIELDS = ['block_hashes', 'medium'] as const;

interface Fields {
  block_hashes?: Uint32Array;
  parent_block_hash?: Uint32Array | null;
  token_ids?: Uint32Array;
  block_size?: number;
  lora_id?: number | null;
  medium?: string | null;
  lora_name?: string | null;
}

function readEvent(c: MsgCursor, path: string): KvEvent | undefined {
  const fields: Fields = {};
  let tag: string;
  if (c.peek(path) === 'array') {
    const n = c.arrayLength(path);
    if (n < 1) throw new KvDecodeError(path, 'an empty event has no tag');
    tag = c.str(`${path}[0]`);
    const order = tag === 'BlockStored' ? STORED_FIELDS : tag === 'BlockRemoved' ? REMOVED_FIELDS : [];
    for (let i = 1; i < n; i++) {
      const name = order[i - 1];
      if (name === undefined) c.skip(`${path}[${i}]`);
      else readField(c, name, `${path}.${name}`, fields);
    }
  } else {
    const n = c.mapLength(path);
    tag = '';
    for (let i = 0; i < n; i++) {
      const key = c.peek(`${path} key`) === 'str' ? c.str(`${path} key`) : (c.skip(`${path} key`), '');
      if (key === 'type') tag = c.str(`${path}.type`);
      else if ((STORED_FIELDS as readonly string[]).includes(key)) readField(c, key as keyof Fields, `${path}.${key}`, fields);
      else c.skip(`${path}.${key}`);
    }
  }
  if (tag === 'BlockStored') {
    const hashes = required(fields.block_hashes, `${path}.block_hashes`);
    const tokens = required(fields.token_ids, `${path}.token_ids`);
    const blockSize = required(fields.block_size, `${path}.block_size`);
    if (blockSize < 1) throw new KvDecodeError(`${path}.block_size`, 'must be at least 1');
    if (tokens.length !== (hashes.length / 2) * blockSize)
      throw new KvDecodeError(
        `${path}.token_ids`,
        `holds ${tokens.length} tokens, ${hashes.length / 2} blocks of ${blockSize} need ${(hashes.length / 2) * blockSize}`,
      );
    return {
      kind: 'stored',
      hashes,
      parent: fields.parent_block_hash ?? undefined,
      tokens,
      blockSize,
      medium: fields.medium ?? undefined,
      loraId: fields.lora_id ?? undefined,
      loraName: fields.lora_name ?? undefined,
    };
  }
  if (tag === 'BlockRemoved')
    return { kind: 'removed', hashes: required(fields.block_hashes, `${path}.block_hashes`), medium: fields.medium ?? undefined };
  if (tag === 'AllBlocksCleared') return { kind: 'cleared' };
  if (tag === '') throw new KvDecodeError(`${path}.type`, 'missing');
  return undefined;
}

function readField(c: MsgCursor, name: keyof Fields, path: string, into: Fields): void {
  switch (name) {
    case 'block_hashes': {
      const n = c.arrayLength(path);
      if (n > MAX_EVENT_BLOCKS) throw new KvDecodeError(path, `more than ${MAX_EVENT_BLOCKS} blocks`);
      c.fits(n, 1, path);
      const out = new Uint32Array(2 * n);
      for (let i = 0; i < n; i++) readHash(c, `${path}[${i}]`, out, 2 * i);
      into.block_hashes = out;
      return;
    }
    case 'parent_block_hash':
      if (c.nil()) into.parent_block_hash = null;
      else {
        const out = new Uint32Array(2);
        readHash(c, path, out, 0);
        into.parent_block_hash = out;
      }
      return;
    case 'token_ids': {
      const n = c.arrayLength(path);
      if (n > MAX_EVENT_TOKENS) throw new KvDecodeError(path, `more than ${MAX_EVENT_TOKENS} tokens`);
      c.fits(n, 1, path);
      const out = new Uint32Array(n);
      for (let i = 0; i < n; i++) out[i] = c.u32(`${path}[${i}]`);
      into.token_ids = out;
      return;
    }
    case 'block_size':
      into.block_size = c.u32(path);
      return;
    case 'lora_id':
      into.lora_id = c.nil() ? null : c.number(path);
      return;
    case 'medium':
    case 'lora_name':
      into[name] = c.nil() ? null : c.str(path);
      return;
  }
}

function readHash(c: MsgCursor, path: string, out: Uint32Array, at: number): void {
  const type = c.peek(path);
  if (type === 'int') {
    c.int64(path);
    out[at] = c.hi;
    out[at + 1] = c.lo;
  } else if (type === 'bin') bytesIdentity(c.bin(path), out, at);
  else throw new KvDecodeError(path, `must be an integer or bytes, got ${type}`);
}

const hashWords = new Uint32Array(64);

/** A 64-bit identity of a bytes hash: XXH3 of its bytes as zero-padded words, seeded with its length. */
function bytesIdentity(bytes: Uint8Array, out: Uint32Array, at: number): void {
  const words = Math.ceil(bytes.length / 4);
  const buf = words <= hashWords.length ? hashWords : new Uint32Array(words);
  buf.fill(0, 0, words);
  new Uint8Array(buf.buffer, 0, words * 4).set(bytes);
  xxh3Words(buf, 0, words, 0, bytes.length, out, at);
}

function optionalU32(c: MsgCursor, path: string): number | undefined {
  return c.nil() ? undefined : c.u32(path);
}

function required<T>(value: T | undefined, path: string): T {
  if (value === undefined) throw new KvDecodeError(path, 'missing');
  return value;
}
