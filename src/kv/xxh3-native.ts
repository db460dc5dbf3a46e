/**
 * XXH3-64 by the runtime's own C implementation where it has one (Bun's `Bun.hash.xxHash3`): about
 * a tenth of the JavaScript one's time for a 64-token block (measured: 56 ns against 348 ns, the
 * block copied into a scratch array first). Used only for seeds where it gives the reference
 * answer, checked at construction against xxh3.ts (which xxh3.test.ts checks against the reference
 * outputs): Bun 1.4 reduces a seed to its low 32 bits, so a seed of 2^32 or more keeps the
 * JavaScript hash. Elsewhere (Deno) there is none and xxh3.ts does the work. Each hash allocates
 * the 64-bit BigInt the runtime answers with; nothing else.
 */
import { xxh3Pair, xxh3Words, type SeededXxh3 } from './xxh3.ts';

type RuntimeXxh3 = (input: Uint8Array, seed: bigint) => bigint;

const runtimeXxh3: RuntimeXxh3 | undefined = (globalThis as unknown as { Bun?: { hash?: { xxHash3?: RuntimeXxh3 } } }).Bun?.hash?.xxHash3;

/** Lengths (in u32 words) the check covers: every length class of XXH3 (≤ 16, ≤ 128, ≤ 240 bytes, long). */
const CHECKED_WORDS = [1, 4, 16, 33, 60, 64, 128, 512];

export class NativeXxh3 implements SeededXxh3 {
  readonly #hash: RuntimeXxh3;
  readonly #seed: bigint;
  /** The answer, written as a u64 and read as two u32 words (little-endian: [lo, hi]). */
  readonly #answer = new BigUint64Array(1);
  readonly #halves = new Uint32Array(this.#answer.buffer);
  #scratch = new Uint32Array(64);
  #scratchBytes = new Uint8Array(this.#scratch.buffer);
  readonly #pair = new Uint32Array(4);
  readonly #pairBytes = new Uint8Array(this.#pair.buffer);

  private constructor(hash: RuntimeXxh3, seedHi: number, seedLo: number) {
    this.#hash = hash;
    this.#seed = (BigInt(seedHi >>> 0) << 32n) | BigInt(seedLo >>> 0);
  }

  /**
   * The runtime's XXH3 for this seed, when there is one and it agrees with xxh3.ts; else undefined.
   * `hash` stands in for the runtime's (null: it has none).
   * @example const native = NativeXxh3.for(0, 0); native?.words(tokens, 0, 16, keys, 0);
   */
  static for(seedHi: number, seedLo: number, hash: RuntimeXxh3 | null = runtimeXxh3 ?? null): NativeXxh3 | undefined {
    if (hash === null) return undefined;
    const native = new NativeXxh3(hash, seedHi, seedLo);
    const input = new Uint32Array(512);
    for (let i = 0; i < input.length; i++) input[i] = Math.imul(i + 1, 0x9e3779b1) >>> 0;
    const want = new Uint32Array(2);
    const got = new Uint32Array(2);
    for (const count of CHECKED_WORDS) {
      xxh3Words(input, 0, count, seedHi, seedLo, want, 0);
      native.words(input, 0, count, got, 0);
      if (want[0] !== got[0] || want[1] !== got[1]) return undefined;
    }
    xxh3Pair(input[0]!, input[1]!, input[2]!, input[3]!, seedHi, seedLo, want, 0);
    native.pair(input[0]!, input[1]!, input[2]!, input[3]!, got, 0);
    return want[0] === got[0] && want[1] === got[1] ? native : undefined;
  }

  /** xxh3Words for this seed: `count` words of `words` from `start`, the hash to out[at] (high), out[at + 1] (low). */
  words(words: Uint32Array, start: number, count: number, out: Uint32Array, at: number): void {
    if (this.#scratch.length !== count) {
      this.#scratch = new Uint32Array(count);
      this.#scratchBytes = new Uint8Array(this.#scratch.buffer);
    }
    const scratch = this.#scratch;
    for (let i = 0; i < count; i++) scratch[i] = words[start + i]!;
    this.#answer[0] = this.#hash(this.#scratchBytes, this.#seed);
    out[at] = this.#halves[1]!;
    out[at + 1] = this.#halves[0]!;
  }

  /** xxh3Pair for this seed: the 16 bytes a ‖ b (each a u64 as hi, lo, written little-endian). */
  pair(aHi: number, aLo: number, bHi: number, bLo: number, out: Uint32Array, at: number): void {
    const pair = this.#pair;
    pair[0] = aLo;
    pair[1] = aHi;
    pair[2] = bLo;
    pair[3] = bHi;
    this.#answer[0] = this.#hash(this.#pairBytes, this.#seed);
    out[at] = this.#halves[1]!;
    out[at + 1] = this.#halves[0]!;
  }
}
