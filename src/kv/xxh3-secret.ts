/**
 * XXH3's secret and what a seed derives from it, once per seed: the secret of long inputs (its u32
 * at every byte offset, so the algorithm's unaligned reads are one load), the seeded secret pairs of
 * mid-size inputs' 16-byte mixes (per byte offset: secret + seed, then secret − seed, each as hi, lo)
 * and the two bit flips of 9-to-16-byte inputs. Float64Arrays: JavaScriptCore speculates that a
 * Uint32Array read fits an int32, and left its optimised code on every call where one did not.
 */
import { add64, HI, LO, R, sub64 } from './u64.ts';

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
export const SECRET_SIZE = 192;

function rd32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

/** The u32 at every byte offset of a secret, so the algorithm's unaligned secret reads are one load. */
function wordsAt(secret: Uint8Array, into: Float64Array): Float64Array {
  for (let k = 0; k + 4 <= secret.length; k++) into[k] = rd32(secret, k);
  return into;
}

/** A seed's tables (see the module's header). */
export interface SeedTables {
  readonly hi: number;
  readonly lo: number;
  readonly secret: Float64Array;
  readonly mix: Float64Array;
  readonly flip: Float64Array;
}

/** The default secret's words, at every byte offset. */
export const SECRET_WORDS = wordsAt(K_SECRET, new Float64Array(SECRET_SIZE - 3));

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

/**
 * The tables of a seed given as hi, lo u32 halves.
 * @example const t = tablesFor(0, 0);
 */
export function tablesFor(sh: number, sl: number): SeedTables {
  if (sh === 0 && sl === 0) return ZERO_TABLES;
  if (seededTables.hi !== sh || seededTables.lo !== sl) seededTables = seedTables(sh, sl);
  return seededTables;
}
