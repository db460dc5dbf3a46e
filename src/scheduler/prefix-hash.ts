/**
 * Block-sized chain hashes of a prompt: h_i = hash(h_{i-1}, chunk_i), over full chunks only (a
 * partial last block is not cached by engines either). Equal h_i means equal prefixes up to block
 * i, with collision odds of a 53-bit hash, so two prompts sharing a system prompt share the first
 * hashes and nothing after they diverge.
 *
 * Token ids are hashed as 32-bit words; text as its UTF-8 bytes taken four at a time, so a text
 * chunk is `blockSize` words (about one block of tokens at four bytes per token). Only a prompt's
 * first MAX_HASHED_BLOCKS blocks are hashed: prompts that share that much are alike for routing,
 * and hashing (then recording) every block of a megabytes-long prompt held the event loop for
 * about a tenth of a second.
 */
import { errors } from '../core/errors.ts';

/** Tokens per block when instances do not say otherwise (MindIE's default `block_size`). */
export const DEFAULT_BLOCK_SIZE = 128;
const MAX_TOKEN_ID = 0xffff_ffff;
/** Most blocks hashed per prompt: 1024 blocks are 131,072 tokens at the default block size. */
export const MAX_HASHED_BLOCKS = 1024;

/**
 * Chain hashes of a prompt's full blocks (its first MAX_HASHED_BLOCKS), from token ids when given,
 * else from text; [] when neither.
 * @throws PdlinkError `bad_request` naming `promptTokens[i]` for a token id that is not an integer in [0, 2^32).
 * @example prefixHashes({ promptTokens: tokens }, 128).length // Math.floor(tokens.length / 128)
 */
export function prefixHashes(
  prompt: { readonly promptTokens?: readonly number[]; readonly promptText?: string },
  blockSize: number,
): number[] {
  if (prompt.promptTokens !== undefined) return hashTokens(prompt.promptTokens, blockSize);
  if (prompt.promptText !== undefined) return hashText(prompt.promptText, blockSize);
  return [];
}

function hashTokens(tokens: readonly number[], blockSize: number): number[] {
  const hashes: number[] = [];
  let a = SEED_A;
  let b = SEED_B;
  let inChunk = 0;
  const hashed = Math.min(tokens.length, MAX_HASHED_BLOCKS * blockSize);
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as number;
    if (!Number.isInteger(token) || token < 0 || token > MAX_TOKEN_ID) {
      throw errors.invalidArgument(`promptTokens[${i}]`, `must be an integer in [0, ${MAX_TOKEN_ID}]`);
    }
    // Past the hashed blocks the ids are still checked, not hashed.
    if (i >= hashed) continue;
    a = mix(a, token | 0);
    b = mix(b, (token ^ LANE_B_SALT) | 0);
    if (++inChunk === blockSize) {
      a = finish(a, blockSize);
      b = finish(b, blockSize ^ LANE_B_SALT);
      hashes.push(combine(a, b));
      inChunk = 0;
    }
  }
  return hashes;
}

const encoder = new TextEncoder();

/**
 * The text's UTF-8 bytes are written into one buffer kept between calls (grown as needed, up to
 * SCRATCH_MAX) and read through one view of it: encoding to a new array per prompt and viewing its
 * buffer made an ArrayBuffer object and a DataView per request. A longer prompt gets arrays of its
 * own, so one huge prompt does not stay in memory for good.
 */
const SCRATCH_MAX = 1 << 20;
let scratch = new Uint8Array(4096);
let scratchView = new DataView(scratch.buffer);

function hashText(whole: string, blockSize: number): number[] {
  // The hashed blocks are at most this many bytes, so they come from at most this many UTF-16
  // units (a unit is at least one byte): the rest of the text is not encoded at all. One unit more
  // keeps a surrogate pair that straddles the cut whole within the hashed bytes.
  const cap = MAX_HASHED_BLOCKS * blockSize * 4;
  const text = whole.length > cap + 1 ? whole.slice(0, cap + 1) : whole;
  // UTF-8 takes at most 3 bytes per UTF-16 unit: a text this short has no full block to hash.
  const most = text.length * 3;
  if (most < blockSize * 4) return [];
  let length: number;
  let view: DataView;
  if (most > SCRATCH_MAX) {
    const bytes = encoder.encode(text);
    length = bytes.length;
    view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } else {
    if (scratch.length < most) {
      scratch = new Uint8Array(Math.min(SCRATCH_MAX, Math.max(most, 2 * scratch.length)));
      scratchView = new DataView(scratch.buffer);
    }
    length = encoder.encodeInto(text, scratch).written;
    view = scratchView;
  }
  const words = Math.min(Math.floor(length / 4), MAX_HASHED_BLOCKS * blockSize);
  const hashes: number[] = [];
  let a = SEED_A;
  let b = SEED_B;
  let inChunk = 0;
  for (let w = 0; w < words; w++) {
    const word = view.getInt32(w * 4, true);
    a = mix(a, word);
    b = mix(b, word ^ LANE_B_SALT);
    if (++inChunk === blockSize) {
      a = finish(a, blockSize);
      b = finish(b, blockSize ^ LANE_B_SALT);
      hashes.push(combine(a, b));
      inChunk = 0;
    }
  }
  return hashes;
}

// Two independent 32-bit lanes (MurmurHash3's word mix and finaliser, different seeds and salt)
// give a 53-bit key that fits a JS number exactly, so hashes index a Map without BigInt.
const SEED_A = 0x9747b28c | 0;
const SEED_B = 0x5bd1e995 | 0;
const LANE_B_SALT = 0x6a09e667 | 0;

function mix(h: number, word: number): number {
  let k = Math.imul(word, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);
  let x = h ^ k;
  x = (x << 13) | (x >>> 19);
  return (Math.imul(x, 5) + 0xe6546b64) | 0;
}

function finish(h: number, length: number): number {
  let x = h ^ length;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x | 0;
}

function combine(a: number, b: number): number {
  return (a >>> 0) * 0x20_0000 + (b >>> 11);
}
