/**
 * The keys of a token sequence's KV blocks, as Mooncake's indexer standard defines them: each full
 * block's token ids hashed as little-endian u32 with XXH3-64 (the block's local hash), chained with
 * the key of the block before it (key = XXH3(previous key ‖ local hash), both as little-endian u64);
 * the first block's key is its local hash, or chained with a parent's key when the sequence
 * continues one. pdlink computes these itself from token ids, so the index never depends on an
 * engine's own hash function or seed. Keys are written as (hi, lo) u32 pairs into a caller's array.
 */
import { errors } from '../core/errors.ts';
import { ScriptXxh3, type SeededXxh3 } from './xxh3.ts';
import { NativeXxh3 } from './xxh3-native.ts';

const MAX_TOKEN_ID = 0xffff_ffff;

/** A 64-bit seed as two u32 halves (Mooncake's `S`; default 0). */
export interface Seed {
  readonly hi: number;
  readonly lo: number;
}

export const ZERO_SEED: Seed = Object.freeze({ hi: 0, lo: 0 });

/**
 * Hashes token sequences into block keys; one instance per seed, reusing its scratch memory, so a
 * prompt is keyed without allocating once its buffers have grown to the longest prompt seen
 * (bounded: a prompt longer than SCRATCH_TOKENS tokens gets buffers of its own).
 * @example const hasher = new BlockHasher(); const n = hasher.keys(tokens, 16, out); // out[2i], out[2i + 1]
 */
export class BlockHasher {
  readonly seed: Seed;
  #tokens = new Uint32Array(4096);
  readonly #local = new Uint32Array(2);
  /** The runtime's own XXH3 when it has one that agrees for this seed (xxh3-native.ts), else xxh3.ts. */
  readonly #hash: SeededXxh3;
  /** Whether blocks are hashed by the runtime's own XXH3 (Bun) rather than xxh3.ts. */
  readonly native: boolean;

  constructor(seed: Seed = ZERO_SEED, native = true) {
    this.seed = seed;
    const runtime = native ? NativeXxh3.for(seed.hi, seed.lo) : undefined;
    this.native = runtime !== undefined;
    this.#hash = runtime ?? new ScriptXxh3(seed.hi, seed.lo);
  }

  /**
   * Writes the keys of the full blocks of `tokens` into `out` (two words per block, from 0) and
   * returns how many blocks there are. `parent` (hi, lo) chains the first block to a preceding one.
   * @throws PdlinkError `bad_request` naming `tokens[i]` for an id that is not an integer in [0, 2^32).
   * @example hasher.keys([1, 2, 3, 4, 5], 2, out) // 2
   */
  keys(tokens: ArrayLike<number>, blockSize: number, out: Uint32Array, parent?: Seed, path = 'tokens'): number {
    const blocks = Math.floor(tokens.length / blockSize);
    if (blocks === 0) return 0;
    if (out.length < 2 * blocks) throw errors.invalidArgument('out', `must hold ${2 * blocks} words`);
    let words: Uint32Array;
    if (tokens instanceof Uint32Array) words = tokens;
    else {
      const n = blocks * blockSize;
      words = tokenWords(tokens, n, n <= SCRATCH_TOKENS ? this.#scratch(n) : new Uint32Array(n), path);
    }
    this.chain(words, 0, blocks, blockSize, out, 0, parent);
    return blocks;
  }

  /**
   * The keys of `blocks` blocks of `words` from index `start`, into out from `at` (two words each);
   * `parent` chains the first one.
   * @example hasher.chain(event.tokens, 0, 3, 16, keys, 0, parentKey);
   */
  chain(words: Uint32Array, start: number, blocks: number, blockSize: number, out: Uint32Array, at: number, parent?: Seed): void {
    const hash = this.#hash;
    const local = this.#local;
    for (let b = 0; b < blocks; b++) {
      const o = at + 2 * b;
      if (b === 0 && parent === undefined) {
        hash.words(words, start, blockSize, out, o);
        continue;
      }
      hash.words(words, start + b * blockSize, blockSize, local, 0);
      hash.pair(b === 0 ? parent!.hi : out[o - 2]!, b === 0 ? parent!.lo : out[o - 1]!, local[0]!, local[1]!, out, o);
    }
  }

  #scratch(n: number): Uint32Array {
    if (this.#tokens.length < n) this.#tokens = new Uint32Array(Math.min(SCRATCH_TOKENS, Math.max(n, 2 * this.#tokens.length)));
    return this.#tokens;
  }
}

/**
 * The first `count` token ids of `tokens` as u32 words, in `into` (or a larger array when it is too
 * short), each checked.
 * @throws PdlinkError `bad_request` naming `path[i]` for an id that is not an integer in [0, 2^32).
 * @example const words = tokenWords(request.tokens, request.tokens.length, scratch, 'promptTokens');
 */
export function tokenWords(tokens: ArrayLike<number>, count: number, into: Uint32Array, path: string): Uint32Array {
  const words = into.length >= count ? into : new Uint32Array(count);
  if (tokens instanceof Uint32Array) {
    words.set(count === tokens.length ? tokens : tokens.subarray(0, count));
    return words;
  }
  for (let i = 0; i < count; i++) {
    const t = tokens[i] as number;
    // One comparison: true only for an integer in [0, 2^32) (a string, NaN, a fraction or a negative fails).
    if (t >>> 0 !== t) throw errors.invalidArgument(`${path}[${i}]`, `must be an integer in [0, ${MAX_TOKEN_ID}]`);
    words[i] = t;
  }
  return words;
}

/** Longest prompt, in tokens, whose copy is kept between calls. */
export const SCRATCH_TOKENS = 1 << 20;

/**
 * A key as 16 hex digits (the Conductor API's and the logs' spelling).
 * @example keyHex(keys, 0) // '9f3c…'
 */
export function keyHex(words: Uint32Array, at: number): string {
  return words[at]!.toString(16).padStart(8, '0') + words[at + 1]!.toString(16).padStart(8, '0');
}
