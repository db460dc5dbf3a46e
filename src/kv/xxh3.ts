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
 * algorithm lands on a word; 64-bit arithmetic is done on (hi, lo) pairs of u32 with 16-bit partial
 * products, in integer operations only.
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

/** Result registers of the 64-bit helpers: every helper leaves its answer here. */
const r = { h: 0, l: 0 };

function rd32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

/** The u32 at every byte offset of a secret, so the algorithm's unaligned secret reads are one load. */
function wordsAt(secret: Uint8Array, into: Uint32Array): Uint32Array {
  for (let k = 0; k + 4 <= secret.length; k++) into[k] = rd32(secret, k);
  return into;
}

const SECRET_WORDS = wordsAt(K_SECRET, new Uint32Array(SECRET_SIZE - 3));

function bswap32(x: number): number {
  return (((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24)) >>> 0;
}

/** r.h:r.l = a × b, the full 64-bit product of two u32 (a × 16-bit halves of b stay below 2^53). */
function mul32(a: number, b: number): void {
  const p1 = a * (b >>> 16);
  const t = (p1 & 0xffff) * 65536 + a * (b & 0xffff);
  r.l = Math.imul(a, b) >>> 0;
  r.h = (Math.floor(p1 * INV_2_16) + Math.floor(t * INV_2_32)) >>> 0;
}

const INV_2_16 = 1 / 65536;
const INV_2_32 = 1 / 4294967296;

/** r.h:r.l = the low 64 bits of a × b. */
function mul64(ah: number, al: number, bh: number, bl: number): void {
  mul32(al, bl);
  r.h = (r.h + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

/** r.h:r.l = the low half of the 128-bit product a × b xor its high half. */
function mul128fold(ah: number, al: number, bh: number, bl: number): void {
  mul32(al, bl);
  const llh = r.h;
  const lll = r.l;
  mul32(al, bh);
  const lhh = r.h;
  const lhl = r.l;
  mul32(ah, bl);
  const hlh = r.h;
  const hll = r.l;
  mul32(ah, bh);
  const t1 = (llh + lhl) >>> 0;
  const w1 = (t1 + hll) >>> 0;
  const carry = (t1 < llh ? 1 : 0) + (w1 < t1 ? 1 : 0);
  const u1 = (r.l + lhh) >>> 0;
  const u2 = (u1 + hlh) >>> 0;
  const w2 = (u2 + carry) >>> 0;
  const w3 = (r.h + (u1 < lhh ? 1 : 0) + (u2 < u1 ? 1 : 0) + (w2 < u2 ? 1 : 0)) >>> 0;
  r.h = (w1 ^ w3) >>> 0;
  r.l = (lll ^ w2) >>> 0;
}

/** r.h:r.l = a + b (mod 2^64). */
function add64(ah: number, al: number, bh: number, bl: number): void {
  const lo = (al + bl) >>> 0;
  r.l = lo;
  r.h = (ah + bh + (lo < al ? 1 : 0)) >>> 0;
}

/** r.h:r.l = a − b (mod 2^64). */
function sub64(ah: number, al: number, bh: number, bl: number): void {
  r.l = (al - bl) >>> 0;
  r.h = (ah - bh - (al < bl ? 1 : 0)) >>> 0;
}

/** XXH3's final mix. */
function avalanche(h: number, l: number): void {
  l = (l ^ (h >>> 5)) >>> 0;
  mul64(h, l, MX1H, MX1L);
  r.l = (r.l ^ r.h) >>> 0;
}

/** XXH64's final mix, used by the shortest inputs. */
function avalanche64(h: number, l: number): void {
  l = (l ^ (h >>> 1)) >>> 0;
  mul64(h, l, P64_2H, P64_2L);
  h = r.h;
  l = (r.l ^ ((r.l >>> 29) | (h << 3))) >>> 0;
  h = (h ^ (h >>> 29)) >>> 0;
  mul64(h, l, P64_3H, P64_3L);
  r.l = (r.l ^ r.h) >>> 0;
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
  h = r.h;
  l = r.l;
  add64(0, h >>> 3, 0, len);
  h = (h ^ r.h) >>> 0;
  l = (l ^ r.l) >>> 0;
  mul64(h, l, MX2H, MX2L);
  r.l = (r.l ^ ((r.l >>> 28) | (r.h << 4))) >>> 0;
  r.h = (r.h ^ (r.h >>> 28)) >>> 0;
}

/** The product XXH3 accumulates for 16 input bytes at `p` against secret bytes at `s`. */
function mix16(w: Uint32Array, p: number, s: Uint32Array, so: number, sh: number, sl: number): void {
  add64(s[so + 4]!, s[so]!, sh, sl);
  const ah = (w[(p + 4) >>> 2]! ^ r.h) >>> 0;
  const al = (w[p >>> 2]! ^ r.l) >>> 0;
  sub64(s[so + 12]!, s[so + 8]!, sh, sl);
  mul128fold(ah, al, (w[(p + 12) >>> 2]! ^ r.h) >>> 0, (w[(p + 8) >>> 2]! ^ r.l) >>> 0);
}

function hash0to16(w: Uint32Array, p: number, len: number, sh: number, sl: number): void {
  const s = SECRET_WORDS;
  if (len > 8) {
    add64((s[28]! ^ s[36]!) >>> 0, (s[24]! ^ s[32]!) >>> 0, sh, sl);
    const loH = (w[(p + 4) >>> 2]! ^ r.h) >>> 0;
    const loL = (w[p >>> 2]! ^ r.l) >>> 0;
    sub64((s[44]! ^ s[52]!) >>> 0, (s[40]! ^ s[48]!) >>> 0, sh, sl);
    const hiH = (w[(p + len - 4) >>> 2]! ^ r.h) >>> 0;
    const hiL = (w[(p + len - 8) >>> 2]! ^ r.l) >>> 0;
    mul128fold(loH, loL, hiH, hiL);
    const fh = r.h;
    const fl = r.l;
    // len + swap64(lo) + hi + fold
    add64(bswap32(loL), bswap32(loH), 0, len);
    add64(r.h, r.l, hiH, hiL);
    add64(r.h, r.l, fh, fl);
    avalanche(r.h, r.l);
    return;
  }
  if (len >= 4) {
    const seedH = (sh ^ bswap32(sl)) >>> 0;
    sub64((s[12]! ^ s[20]!) >>> 0, (s[8]! ^ s[16]!) >>> 0, seedH, sl);
    rrmxmx((w[p >>> 2]! ^ r.h) >>> 0, (w[(p + len - 4) >>> 2]! ^ r.l) >>> 0, len);
    return;
  }
  avalanche64((sh ^ s[60]! ^ s[68]!) >>> 0, (sl ^ s[56]! ^ s[64]!) >>> 0);
}

function hash17to128(w: Uint32Array, p: number, len: number, sh: number, sl: number): void {
  const s = SECRET_WORDS;
  mul64(0, len, P64_1H, P64_1L);
  x.h = r.h;
  x.l = r.l;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        addMix(w, p + 48, s, 96, sh, sl);
        addMix(w, p + len - 64, s, 112, sh, sl);
      }
      addMix(w, p + 32, s, 64, sh, sl);
      addMix(w, p + len - 48, s, 80, sh, sl);
    }
    addMix(w, p + 16, s, 32, sh, sl);
    addMix(w, p + len - 32, s, 48, sh, sl);
  }
  addMix(w, p, s, 0, sh, sl);
  addMix(w, p + len - 16, s, 16, sh, sl);
  avalanche(x.h, x.l);
}

/** The accumulator of the mid-size paths. */
const x = { h: 0, l: 0 };

/** x.h:x.l += mix16(...). */
function addMix(w: Uint32Array, p: number, s: Uint32Array, so: number, sh: number, sl: number): void {
  mix16(w, p, s, so, sh, sl);
  add64(x.h, x.l, r.h, r.l);
  x.h = r.h;
  x.l = r.l;
}

function hash129to240(w: Uint32Array, p: number, len: number, sh: number, sl: number): void {
  const s = SECRET_WORDS;
  mul64(0, len, P64_1H, P64_1L);
  let ah = r.h;
  let al = r.l;
  for (let i = 0; i < 8; i++) {
    mix16(w, p + 16 * i, s, 16 * i, sh, sl);
    add64(ah, al, r.h, r.l);
    ah = r.h;
    al = r.l;
  }
  mix16(w, p + len - 16, s, SECRET_SIZE_MIN - 17, sh, sl);
  let eh = r.h;
  let el = r.l;
  avalanche(ah, al);
  ah = r.h;
  al = r.l;
  const rounds = Math.floor(len / 16);
  for (let i = 8; i < rounds; i++) {
    mix16(w, p + 16 * i, s, 16 * (i - 8) + 3, sh, sl);
    add64(eh, el, r.h, r.l);
    eh = r.h;
    el = r.l;
  }
  add64(ah, al, eh, el);
  avalanche(r.h, r.l);
}

const INIT_H = Uint32Array.from([0, P64_1H, P64_2H, P64_3H, P64_4H, 0, P64_5H, 0]);
const INIT_L = Uint32Array.from([P32_3, P64_1L, P64_2L, P64_3L, P64_4L, P32_2, P64_5L, P32_1]);
const accH = new Uint32Array(8);
const accL = new Uint32Array(8);
/** The secret derived from the last non-zero seed of a long input, kept for the next one. */
const customSecret = new Uint8Array(SECRET_SIZE);
const customWords = new Uint32Array(SECRET_SIZE - 3);
let customHi = 0;
let customLo = 0;
let customMade = false;

function secretFor(sh: number, sl: number): Uint32Array {
  if (sh === 0 && sl === 0) return SECRET_WORDS;
  if (customMade && customHi === sh && customLo === sl) return customWords;
  const view = new DataView(customSecret.buffer);
  for (let i = 0; i < SECRET_SIZE / 16; i++) {
    add64(rd32(K_SECRET, 16 * i + 4), rd32(K_SECRET, 16 * i), sh, sl);
    view.setUint32(16 * i, r.l, true);
    view.setUint32(16 * i + 4, r.h, true);
    sub64(rd32(K_SECRET, 16 * i + 12), rd32(K_SECRET, 16 * i + 8), sh, sl);
    view.setUint32(16 * i + 8, r.l, true);
    view.setUint32(16 * i + 12, r.h, true);
  }
  customHi = sh;
  customLo = sl;
  customMade = true;
  return wordsAt(customSecret, customWords);
}

function accumulate512(w: Uint32Array, p: number, s: Uint32Array, so: number): void {
  for (let i = 0; i < 8; i++) {
    const dh = w[(p + 8 * i + 4) >>> 2]!;
    const dl = w[(p + 8 * i) >>> 2]!;
    const kh = (dh ^ s[so + 8 * i + 4]!) >>> 0;
    const kl = (dl ^ s[so + 8 * i]!) >>> 0;
    const j = i ^ 1;
    add64(accH[j]!, accL[j]!, dh, dl);
    accH[j] = r.h;
    accL[j] = r.l;
    mul32(kl, kh);
    add64(accH[i]!, accL[i]!, r.h, r.l);
    accH[i] = r.h;
    accL[i] = r.l;
  }
}

function scramble(s: Uint32Array, so: number): void {
  for (let i = 0; i < 8; i++) {
    const h = accH[i]!;
    const l = (accL[i]! ^ (h >>> 15) ^ s[so + 8 * i]!) >>> 0;
    mul64((h ^ s[so + 8 * i + 4]!) >>> 0, l, 0, P32_1);
    accH[i] = r.h;
    accL[i] = r.l;
  }
}

function hashLong(w: Uint32Array, p: number, len: number, sh: number, sl: number): void {
  const s = secretFor(sh, sl);
  accH.set(INIT_H);
  accL.set(INIT_L);
  const blocks = Math.floor((len - 1) / BLOCK_LEN);
  for (let n = 0; n < blocks; n++) {
    for (let k = 0; k < STRIPES_PER_BLOCK; k++) accumulate512(w, p + n * BLOCK_LEN + k * STRIPE_LEN, s, k * 8);
    scramble(s, SECRET_SIZE - STRIPE_LEN);
  }
  const stripes = Math.floor((len - 1 - BLOCK_LEN * blocks) / STRIPE_LEN);
  for (let k = 0; k < stripes; k++) accumulate512(w, p + blocks * BLOCK_LEN + k * STRIPE_LEN, s, k * 8);
  accumulate512(w, p + len - STRIPE_LEN, s, SECRET_SIZE - STRIPE_LEN - 7);
  mul64(0, len, P64_1H, P64_1L);
  let ah = r.h;
  let al = r.l;
  for (let i = 0; i < 4; i++) {
    mul128fold(
      (accH[2 * i]! ^ s[11 + 16 * i + 4]!) >>> 0,
      (accL[2 * i]! ^ s[11 + 16 * i]!) >>> 0,
      (accH[2 * i + 1]! ^ s[11 + 16 * i + 12]!) >>> 0,
      (accL[2 * i + 1]! ^ s[11 + 16 * i + 8]!) >>> 0,
    );
    add64(ah, al, r.h, r.l);
    ah = r.h;
    al = r.l;
  }
  avalanche(ah, al);
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
  if (len <= 16) hash0to16(words, p, len, seedHi >>> 0, seedLo >>> 0);
  else if (len <= 128) hash17to128(words, p, len, seedHi >>> 0, seedLo >>> 0);
  else if (len <= 240) hash129to240(words, p, len, seedHi >>> 0, seedLo >>> 0);
  else hashLong(words, p, len, seedHi >>> 0, seedLo >>> 0);
  out[at] = r.h;
  out[at + 1] = r.l;
}
