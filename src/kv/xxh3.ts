/**
 * XXH3-64, the hash Mooncake's indexer standard names for KV blocks, written for this one use: it
 * runs the same on Bun and Deno with nothing to load (no WASM instance made asynchronously, no native
 * addon), reads a block's token ids where they already lie (a Uint32Array's bytes are the tokens as
 * little-endian u32 on every host pdlink runs on), and leaves the 64-bit answer in two u32 halves
 * instead of a BigInt or a new array, so hashing a prompt allocates nothing. The maintained npm
 * implementations were measured against it (bench/kv-index.bench.ts); xxh3.test.ts checks it against
 * the reference implementation's outputs for every length class and several seeds.
 *
 * Input is whole u32 words (token ids, or a chain of two hashes), so every read of the reference
 * algorithm lands on a word. JavaScript has no 64-bit integer multiply (u64.ts does the arithmetic),
 * so the hot loop keeps 64-bit sums as exact doubles: a 32 × 32-bit product is two partial products
 * below 2^48, added up unnormalised (at most 16 stripes, so no sum passes 2^53) and carried into
 * (hi, lo) words once per 1 KiB block instead of once per lane. What a seed changes is derived once
 * per seed (xxh3-secret.ts).
 */

import { add64, bswap32, HI, INV_2_16, INV_2_32, LO, mul128fold, mul64, R, sub64, TWO_32 } from './u64.ts';
import { SECRET_SIZE, SECRET_WORDS, type SeedTables, tablesFor } from './xxh3-secret.ts';

if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) throw new Error('pdlink needs a little-endian host (XXH3 over token ids)');

const SECRET_SIZE_MIN = 136;
const STRIPE_LEN = 64;
const STRIPES_PER_BLOCK = (SECRET_SIZE - STRIPE_LEN) / 8;
const BLOCK_LEN = STRIPE_LEN * STRIPES_PER_BLOCK;
/** Secret offset of a long input's last stripe, and of its accumulators' merge. */
const LAST_STRIPE_SECRET = SECRET_SIZE - STRIPE_LEN - 7;
const MERGE_SECRET = 11;

// The primes, as (hi, lo).
const P32_1 = 0x9e3779b1;
const P32_2 = 0x85ebca77;
const P32_3 = 0xc2b2ae3d;
const P64_1H = 0x9e3779b1,
  P64_1L = 0x85ebca87;
const P64_2H = 0xc2b2ae3d,
  P64_2L = 0x27d4eb4f;
const P64_3H = 0x165667b1,
  P64_3L = 0x9e3779f9;
const P64_4H = 0x85ebca77,
  P64_4L = 0xc2b2ae63;
const P64_5H = 0x27d4eb2f,
  P64_5L = 0x165667c5;
const MX1H = 0x16566791,
  MX1L = 0x9e3779f9;
const MX2H = 0x9fb21c65,
  MX2L = 0x1e98df25;

/** XXH3's final mix. */
function avalanche(h: number, l: number): void {
  l = (l ^ (h >>> 5)) >>> 0;
  mul64(h, l, MX1H, MX1L);
  R[LO] = (R[LO]! ^ R[HI]!) >>> 0;
}

/** XXH64's final mix, used by the shortest inputs. */
function avalanche64(h: number, l: number): void {
  l = (l ^ (h >>> 1)) >>> 0;
  mul64(h, l, P64_2H, P64_2L);
  h = R[HI]!;
  l = (R[LO]! ^ ((R[LO]! >>> 29) | (h << 3))) >>> 0;
  h = (h ^ (h >>> 29)) >>> 0;
  mul64(h, l, P64_3H, P64_3L);
  R[LO] = (R[LO]! ^ R[HI]!) >>> 0;
}

function rrmxmx(h: number, l: number, len: number): void {
  // h ^= rotl(h, 49) ^ rotl(h, 24)
  const r49h = ((l << 17) | (h >>> 15)) >>> 0;
  const r49l = ((h << 17) | (l >>> 15)) >>> 0;
  const r24h = ((h << 24) | (l >>> 8)) >>> 0;
  const r24l = ((l << 24) | (h >>> 8)) >>> 0;
  h = (h ^ r49h ^ r24h) >>> 0;
  l = (l ^ r49l ^ r24l) >>> 0;
  mul64(h, l, MX2H, MX2L);
  h = R[HI]!;
  l = R[LO]!;
  add64(0, h >>> 3, 0, len);
  h = (h ^ R[HI]!) >>> 0;
  l = (l ^ R[LO]!) >>> 0;
  mul64(h, l, MX2H, MX2L);
  R[LO] = (R[LO]! ^ ((R[LO]! >>> 28) | (R[HI]! << 4))) >>> 0;
  R[HI] = (R[HI]! ^ (R[HI]! >>> 28)) >>> 0;
}

/**
 * r = XXH3 of 9 to 16 bytes (`len`) whose first and last eight, as little-endian u64, are a and b:
 * with 16 bytes, the chain step of block keys.
 */
function hash9to16(ah: number, al: number, bh: number, bl: number, len: number, flip: Float64Array): void {
  const loH = (ah ^ flip[0]!) >>> 0;
  const loL = (al ^ flip[1]!) >>> 0;
  const hiH = (bh ^ flip[2]!) >>> 0;
  const hiL = (bl ^ flip[3]!) >>> 0;
  mul128fold(loH, loL, hiH, hiL);
  // len + swap64(lo) + hi + fold, with the carry taken from a double sum.
  const l = len + bswap32(loH) + hiL + R[LO]!;
  avalanche((bswap32(loL) + hiH + R[HI]! + Math.floor(l * INV_2_32)) >>> 0, l >>> 0);
}

function hash0to16(w: Uint32Array, p: number, len: number, sh: number, sl: number, t: SeedTables): void {
  const s = SECRET_WORDS;
  if (len > 8) {
    hash9to16(w[(p + 4) >>> 2]!, w[p >>> 2]!, w[(p + len - 4) >>> 2]!, w[(p + len - 8) >>> 2]!, len, t.flip);
    return;
  }
  if (len >= 4) {
    const seedH = (sh ^ bswap32(sl)) >>> 0;
    sub64((s[12]! ^ s[20]!) >>> 0, (s[8]! ^ s[16]!) >>> 0, seedH, sl);
    rrmxmx((w[p >>> 2]! ^ R[HI]!) >>> 0, (w[(p + len - 4) >>> 2]! ^ R[LO]!) >>> 0, len);
    return;
  }
  avalanche64((sh ^ s[60]! ^ s[68]!) >>> 0, (sl ^ s[56]! ^ s[64]!) >>> 0);
}

/** r = the 16-byte mix of the words from index `wi` against the seeded secret pair at byte `o`. */
function mix16(w: Uint32Array, wi: number, mix: Float64Array, o: number): void {
  const m = 4 * o;
  mul128fold(
    (w[wi + 1]! ^ mix[m]!) >>> 0,
    (w[wi]! ^ mix[m + 1]!) >>> 0,
    (w[wi + 3]! ^ mix[m + 2]!) >>> 0,
    (w[wi + 2]! ^ mix[m + 3]!) >>> 0,
  );
}

function hash17to128(w: Uint32Array, p: number, len: number, t: SeedTables): void {
  const mix = t.mix;
  const wi = p >>> 2;
  const last = (p + len) >>> 2;
  mul64(0, len, P64_1H, P64_1L);
  // The 64-bit sum kept as two doubles, carried once at the end.
  let h = R[HI]!;
  let l = R[LO]!;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        mix16(w, wi + 12, mix, 96);
        h += R[HI]!;
        l += R[LO]!;
        mix16(w, last - 16, mix, 112);
        h += R[HI]!;
        l += R[LO]!;
      }
      mix16(w, wi + 8, mix, 64);
      h += R[HI]!;
      l += R[LO]!;
      mix16(w, last - 12, mix, 80);
      h += R[HI]!;
      l += R[LO]!;
    }
    mix16(w, wi + 4, mix, 32);
    h += R[HI]!;
    l += R[LO]!;
    mix16(w, last - 8, mix, 48);
    h += R[HI]!;
    l += R[LO]!;
  }
  mix16(w, wi, mix, 0);
  h += R[HI]!;
  l += R[LO]!;
  mix16(w, last - 4, mix, 16);
  h += R[HI]!;
  l += R[LO]!;
  avalanche((h + Math.floor(l * INV_2_32)) >>> 0, l >>> 0);
}

function hash129to240(w: Uint32Array, p: number, len: number, t: SeedTables): void {
  const mix = t.mix;
  const wi = p >>> 2;
  mul64(0, len, P64_1H, P64_1L);
  let h = R[HI]!;
  let l = R[LO]!;
  for (let i = 0; i < 8; i++) {
    mix16(w, wi + 4 * i, mix, 16 * i);
    h += R[HI]!;
    l += R[LO]!;
  }
  avalanche((h + Math.floor(l * INV_2_32)) >>> 0, l >>> 0);
  const ah = R[HI]!;
  const al = R[LO]!;
  mix16(w, ((p + len) >>> 2) - 4, mix, SECRET_SIZE_MIN - 17);
  h = R[HI]!;
  l = R[LO]!;
  const rounds = Math.floor(len / 16);
  for (let i = 8; i < rounds; i++) {
    mix16(w, wi + 4 * i, mix, 16 * (i - 8) + 3);
    h += R[HI]!;
    l += R[LO]!;
  }
  l += al;
  avalanche((h + ah + Math.floor(l * INV_2_32)) >>> 0, l >>> 0);
}

const INIT_H = Float64Array.from([0, P64_1H, P64_2H, P64_3H, P64_4H, 0, P64_5H, 0]);
const INIT_L = Float64Array.from([P32_3, P64_1L, P64_2L, P64_3L, P64_4L, P32_2, P64_5L, P32_1]);
/** A long input's eight 64-bit accumulators as u32 words (between its 1 KiB blocks). */
const accH = new Float64Array(8);
const accL = new Float64Array(8);

/**
 * Accumulates `stripes` stripes from word `base` (secret offsets 0, 8, 16, …) and, when lastBase ≥ 0,
 * the stripe at word lastBase against the secret at byte lastSecret, onto the accumulators held in
 * fromH/fromL. Lanes go in pairs (a lane's data is added to its neighbour's accumulator, and the
 * merge folds a pair together), all stripes of a pair at once, in exact double sums: a (units), b
 * (units of 2^16: the high partial products) and c (units of 2^32: the data's high words). At most 16
 * stripes per call, so no sum reaches 2^53. With mergeLen > 0 (the input's last stripes, mergeLen
 * bytes long in all) the pairs are merged as they are carried and the hash is left in R; otherwise
 * the carried accumulators go to accH/accL.
 */
function accumulate(
  w: Uint32Array,
  base: number,
  stripes: number,
  s: Float64Array,
  lastBase: number,
  lastSecret: number,
  fromH: Float64Array,
  fromL: Float64Array,
  mergeLen: number,
): void {
  const count = lastBase >= 0 ? stripes + 1 : stripes;
  mul64(0, mergeLen, P64_1H, P64_1L);
  let mh = R[HI]!;
  let ml = R[LO]!;
  for (let pair = 0; pair < 4; pair++) {
    let ae = 0;
    let be = 0;
    let ce = 0;
    let ao = 0;
    let bo = 0;
    let co = 0;
    for (let k = 0; k < count; k++) {
      const b = (k < stripes ? base + 16 * k : lastBase) + 4 * pair;
      const o = (k < stripes ? 8 * k : lastSecret) + 16 * pair;
      const del = w[b]!;
      const deh = w[b + 1]!;
      const dol = w[b + 2]!;
      const doh = w[b + 3]!;
      const kel = (del ^ s[o]!) >>> 0;
      const keh = (deh ^ s[o + 4]!) >>> 0;
      const kol = (dol ^ s[o + 8]!) >>> 0;
      const koh = (doh ^ s[o + 12]!) >>> 0;
      ae += kel * (keh & 0xffff) + dol;
      be += kel * (keh >>> 16);
      ce += doh;
      ao += kol * (koh & 0xffff) + del;
      bo += kol * (koh >>> 16);
      co += deh;
    }
    // Carried: low words below 3 × 2^32, high words below 2^53 (both taken mod 2^32 where used).
    const i = 2 * pair;
    let aHi = Math.floor(ae * INV_2_32);
    let bHi = Math.floor(be * INV_2_16);
    const el = fromL[i]! + (ae - aHi * TWO_32) + (be - bHi * 65536) * 65536;
    const eh = fromH[i]! + aHi + bHi + ce + Math.floor(el * INV_2_32);
    aHi = Math.floor(ao * INV_2_32);
    bHi = Math.floor(bo * INV_2_16);
    const ol = fromL[i + 1]! + (ao - aHi * TWO_32) + (bo - bHi * 65536) * 65536;
    const oh = fromH[i + 1]! + aHi + bHi + co + Math.floor(ol * INV_2_32);
    if (mergeLen > 0) {
      const m = MERGE_SECRET + 16 * pair;
      mul128fold((eh ^ s[m + 4]!) >>> 0, (el ^ s[m]!) >>> 0, (oh ^ s[m + 12]!) >>> 0, (ol ^ s[m + 8]!) >>> 0);
      mh += R[HI]!;
      ml += R[LO]!;
    } else {
      accH[i] = eh >>> 0;
      accL[i] = el >>> 0;
      accH[i + 1] = oh >>> 0;
      accL[i + 1] = ol >>> 0;
    }
  }
  if (mergeLen > 0) avalanche((mh + Math.floor(ml * INV_2_32)) >>> 0, ml >>> 0);
}

function scramble(s: Float64Array, so: number): void {
  for (let i = 0; i < 8; i++) {
    const h = accH[i]!;
    const l = (accL[i]! ^ (h >>> 15) ^ s[so + 8 * i]!) >>> 0;
    mul64((h ^ s[so + 8 * i + 4]!) >>> 0, l, 0, P32_1);
    accH[i] = R[HI]!;
    accL[i] = R[LO]!;
  }
}

function hashLong(w: Uint32Array, p: number, len: number, t: SeedTables): void {
  const s = t.secret;
  const wi = p >>> 2;
  const blocks = Math.floor((len - 1) / BLOCK_LEN);
  let fromH = INIT_H;
  let fromL = INIT_L;
  for (let n = 0; n < blocks; n++) {
    accumulate(w, wi + n * (BLOCK_LEN >>> 2), STRIPES_PER_BLOCK, s, -1, 0, fromH, fromL, 0);
    scramble(s, SECRET_SIZE - STRIPE_LEN);
    fromH = accH;
    fromL = accL;
  }
  const stripes = Math.floor((len - 1 - BLOCK_LEN * blocks) / STRIPE_LEN);
  const lastBase = ((p + len) >>> 2) - STRIPE_LEN / 4;
  accumulate(w, wi + blocks * (BLOCK_LEN >>> 2), stripes, s, lastBase, LAST_STRIPE_SECRET, fromH, fromL, len);
}

/**
 * XXH3-64 of `count` u32 words of `words` from index `start` (their 4 × count little-endian bytes),
 * with the 64-bit seed seedHi:seedLo; the hash is written to out[at] (high 32 bits) and out[at + 1]
 * (low 32 bits).
 * @example const out = new Uint32Array(2); xxh3Words(Uint32Array.of(1, 2, 3), 0, 3, 0, 0, out, 0);
 */
export function xxh3Words(
  words: Uint32Array,
  start: number,
  count: number,
  seedHi: number,
  seedLo: number,
  out: Uint32Array,
  at: number,
): void {
  const p = start * 4;
  const len = count * 4;
  const t = tablesFor(seedHi >>> 0, seedLo >>> 0);
  if (len <= 16) hash0to16(words, p, len, seedHi >>> 0, seedLo >>> 0, t);
  else if (len <= 128) hash17to128(words, p, len, t);
  else if (len <= 240) hash129to240(words, p, len, t);
  else hashLong(words, p, len, t);
  out[at] = R[HI]!;
  out[at + 1] = R[LO]!;
}

/**
 * XXH3-64 of the 16 bytes `a ‖ b` (two u64 as little-endian, each given as hi, lo), seeded: the
 * chain step of block keys, without an array for its input. The hash is written to out[at], out[at + 1].
 * @example xxh3Pair(prevHi, prevLo, localHi, localLo, 0, 0, keys, 2 * i);
 */
export function xxh3Pair(
  aHi: number,
  aLo: number,
  bHi: number,
  bLo: number,
  seedHi: number,
  seedLo: number,
  out: Uint32Array,
  at: number,
): void {
  hash9to16(aHi >>> 0, aLo >>> 0, bHi >>> 0, bLo >>> 0, 16, tablesFor(seedHi >>> 0, seedLo >>> 0).flip);
  out[at] = R[HI]!;
  out[at + 1] = R[LO]!;
}

/** XXH3 with its seed bound: what a block hasher calls, whichever implementation serves it. */
export interface SeededXxh3 {
  /** xxh3Words of `count` words of `words` from `start`, the hash to out[at] (high) and out[at + 1] (low). */
  words(words: Uint32Array, start: number, count: number, out: Uint32Array, at: number): void;
  /** xxh3Pair of a ‖ b (each a u64 as hi, lo), the hash to out[at], out[at + 1]. */
  pair(aHi: number, aLo: number, bHi: number, bLo: number, out: Uint32Array, at: number): void;
}

/**
 * This file's XXH3 with a seed bound to it.
 * @example new ScriptXxh3(0, 0).words(tokens, 0, 16, keys, 0);
 */
export class ScriptXxh3 implements SeededXxh3 {
  readonly #hi: number;
  readonly #lo: number;

  constructor(seedHi: number, seedLo: number) {
    this.#hi = seedHi;
    this.#lo = seedLo;
  }

  words(words: Uint32Array, start: number, count: number, out: Uint32Array, at: number): void {
    xxh3Words(words, start, count, this.#hi, this.#lo, out, at);
  }

  pair(aHi: number, aLo: number, bHi: number, bLo: number, out: Uint32Array, at: number): void {
    xxh3Pair(aHi, aLo, bHi, bLo, this.#hi, this.#lo, out, at);
  }
}
