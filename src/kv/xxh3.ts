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
 * algorithm lands on a word. JavaScript has no 64-bit integer multiply, so the hot loops keep 64-bit
 * sums as exact doubles: a 32 × 32-bit product is two partial products below 2^48, added up
 * unnormalised (at most 16 stripes, so no sum passes 2^53) and carried into (hi, lo) words once per
 * 1 KiB block instead of once per lane. Seed-dependent constants are derived once per seed.
 */

if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) throw new Error('pdlink needs a little-endian host (XXH3 over token ids)');

/** The reference implementation's default 192-byte secret. */
const K_SECRET = Uint8Array.from([
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97,
  0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff,
  0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91,
  0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46,
  0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0,
  0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81,
  0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b,
  0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28,
  0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
]);
const SECRET_SIZE = 192;
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

const TWO_32 = 4294967296;
const INV_2_16 = 1 / 65536;
const INV_2_32 = 1 / TWO_32;

/**
 * Result registers of the 64-bit helpers: every helper leaves its answer in R[HI], R[LO], as u32
 * values. Typed arrays, not an object's fields (which JavaScriptCore boxes), and Float64Arrays, like
 * every table of words ≥ 2^31 here: JavaScriptCore speculates that a Uint32Array read fits an int32
 * and left its optimised code on every call where one did not.
 */
const R = new Float64Array(2);
const HI = 0;
const LO = 1;

function rd32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

/** The u32 at every byte offset of a secret, so the algorithm's unaligned secret reads are one load. */
function wordsAt(secret: Uint8Array, into: Float64Array): Float64Array {
  for (let k = 0; k + 4 <= secret.length; k++) into[k] = rd32(secret, k);
  return into;
}

function bswap32(x: number): number {
  return (((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24)) >>> 0;
}

/** The high 32 bits of a × b for two u32 (each partial product stays below 2^48, exact in a double). */
function mulHi(a: number, b: number): number {
  return ((a * (b >>> 16) + Math.floor(a * (b & 0xffff) * INV_2_16)) * INV_2_16) >>> 0;
}

/** R = the low 64 bits of a × b. */
function mul64(ah: number, al: number, bh: number, bl: number): void {
  R[LO] = Math.imul(al, bl) >>> 0;
  R[HI] = (mulHi(al, bl) + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

/**
 * R = the low half of the 128-bit product a × b xor its high half. b is cut in 16-bit limbs, so each
 * partial product (a 32-bit word of a × a limb) is below 2^48; the column sums carry in doubles.
 */
function mul128fold(ah: number, al: number, bh: number, bl: number): void {
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  const b2 = bh & 0xffff;
  const b3 = bh >>> 16;
  const c16 = al * b1;
  const c48 = al * b3 + ah * b1;
  const c80 = ah * b3;
  const c16h = Math.floor(c16 * INV_2_16);
  const w0 = al * b0 + (c16 - c16h * 65536) * 65536;
  const c48h = Math.floor(c48 * INV_2_16);
  const w1 = al * b2 + ah * b0 + c16h + Math.floor(w0 * INV_2_32) + (c48 - c48h * 65536) * 65536;
  const c80h = Math.floor(c80 * INV_2_16);
  const w2 = ah * b2 + c48h + Math.floor(w1 * INV_2_32) + (c80 - c80h * 65536) * 65536;
  const w3 = c80h + Math.floor(w2 * INV_2_32);
  R[HI] = (w1 ^ w3) >>> 0;
  R[LO] = (w0 ^ w2) >>> 0;
}

/** R = a + b (mod 2^64). */
function add64(ah: number, al: number, bh: number, bl: number): void {
  const lo = (al + bl) >>> 0;
  R[LO] = lo;
  R[HI] = (ah + bh + (lo < al ? 1 : 0)) >>> 0;
}

/** R = a − b (mod 2^64). */
function sub64(ah: number, al: number, bh: number, bl: number): void {
  R[LO] = (al - bl) >>> 0;
  R[HI] = (ah - bh - (al < bl ? 1 : 0)) >>> 0;
}

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
 * What a seed changes, derived once per seed: the secret of long inputs (secret words at every byte
 * offset), the seeded secret pairs of the mid-size inputs' 16-byte mixes (per byte offset: secret
 * + seed, then secret − seed, each as hi, lo), and the two bit flips of 9-to-16-byte inputs.
 */
interface SeedTables {
  readonly hi: number;
  readonly lo: number;
  readonly secret: Float64Array;
  readonly mix: Float64Array;
  readonly flip: Float64Array;
}

const SECRET_WORDS = wordsAt(K_SECRET, new Float64Array(SECRET_SIZE - 3));

function seedTables(sh: number, sl: number): SeedTables {
  const s = SECRET_WORDS;
  let secret = SECRET_WORDS;
  if (sh !== 0 || sl !== 0) {
    const bytes = new Uint8Array(SECRET_SIZE);
    const view = new DataView(bytes.buffer);
    for (let i = 0; i < SECRET_SIZE / 16; i++) {
      add64(s[16 * i + 4]!, s[16 * i]!, sh, sl);
      view.setUint32(16 * i, R[LO]!, true);
      view.setUint32(16 * i + 4, R[HI]!, true);
      sub64(s[16 * i + 12]!, s[16 * i + 8]!, sh, sl);
      view.setUint32(16 * i + 8, R[LO]!, true);
      view.setUint32(16 * i + 12, R[HI]!, true);
    }
    secret = wordsAt(bytes, new Float64Array(SECRET_SIZE - 3));
  }
  const mix = new Float64Array(4 * (SECRET_SIZE - 15));
  for (let o = 0; o + 16 <= SECRET_SIZE; o++) {
    add64(s[o + 4]!, s[o]!, sh, sl);
    mix[4 * o] = R[HI]!;
    mix[4 * o + 1] = R[LO]!;
    sub64(s[o + 12]!, s[o + 8]!, sh, sl);
    mix[4 * o + 2] = R[HI]!;
    mix[4 * o + 3] = R[LO]!;
  }
  const flip = new Float64Array(4);
  add64((s[28]! ^ s[36]!) >>> 0, (s[24]! ^ s[32]!) >>> 0, sh, sl);
  flip[0] = R[HI]!;
  flip[1] = R[LO]!;
  sub64((s[44]! ^ s[52]!) >>> 0, (s[40]! ^ s[48]!) >>> 0, sh, sl);
  flip[2] = R[HI]!;
  flip[3] = R[LO]!;
  return { hi: sh, lo: sl, secret, mix, flip };
}

const ZERO_TABLES = seedTables(0, 0);
/** The tables of the last non-zero seed used (a process keys with one seed). */
let seededTables = ZERO_TABLES;

function tablesFor(sh: number, sl: number): SeedTables {
  if (sh === 0 && sl === 0) return ZERO_TABLES;
  if (seededTables.hi !== sh || seededTables.lo !== sl) seededTables = seedTables(sh, sl);
  return seededTables;
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
