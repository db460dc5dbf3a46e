/**
 * 64-bit integer arithmetic on (hi, lo) pairs of u32 words, for XXH3 (JavaScript has no 64-bit
 * integer multiply, and BigInt allocates): partial products are kept below 2^48 so each is exact in
 * a double, and sums are carried in doubles instead of by comparisons. Every helper leaves its
 * answer in the result registers R[HI], R[LO].
 */

export const TWO_32 = 4294967296;
export const INV_2_16 = 1 / 65536;
export const INV_2_32 = 1 / TWO_32;

/**
 * Result registers of the 64-bit helpers: every helper leaves its answer in R[HI], R[LO], as u32
 * values. Typed arrays, not an object's fields (which JavaScriptCore boxes), and Float64Arrays, like
 * every table of words ≥ 2^31 here: JavaScriptCore speculates that a Uint32Array read fits an int32
 * and left its optimised code on every call where one did not.
 */
export const R = new Float64Array(2);
export const HI = 0;
export const LO = 1;

export function bswap32(x: number): number {
  return (((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24)) >>> 0;
}

/** The high 32 bits of a × b for two u32 (each partial product stays below 2^48, exact in a double). */
export function mulHi(a: number, b: number): number {
  return ((a * (b >>> 16) + Math.floor(a * (b & 0xffff) * INV_2_16)) * INV_2_16) >>> 0;
}

/** R = the low 64 bits of a × b. */
export function mul64(ah: number, al: number, bh: number, bl: number): void {
  R[LO] = Math.imul(al, bl) >>> 0;
  R[HI] = (mulHi(al, bl) + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

/**
 * R = the low half of the 128-bit product a × b xor its high half. b is cut in 16-bit limbs, so each
 * partial product (a 32-bit word of a × a limb) is below 2^48; the column sums carry in doubles.
 */
export function mul128fold(ah: number, al: number, bh: number, bl: number): void {
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
export function add64(ah: number, al: number, bh: number, bl: number): void {
  const lo = (al + bl) >>> 0;
  R[LO] = lo;
  R[HI] = (ah + bh + (lo < al ? 1 : 0)) >>> 0;
}

/** R = a − b (mod 2^64). */
export function sub64(ah: number, al: number, bh: number, bl: number): void {
  R[LO] = (al - bl) >>> 0;
  R[HI] = (ah - bh - (al < bl ? 1 : 0)) >>> 0;
}
