import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { BlockHasher } from './block-keys.ts';
import { NativeXxh3 } from './xxh3-native.ts';
import { xxh3Pair, xxh3Words } from './xxh3.ts';

describe('NativeXxh3 (the runtime’s own XXH3)', () => {
  test('on Bun it serves seeds below 2^32 and agrees with xxh3.ts on every length class, for any words', () => {
    const native = NativeXxh3.for(0, 123_456_789)!;
    expect(native).toBeDefined();
    fc.assert(
      fc.property(fc.uint32Array({ minLength: 1, maxLength: 600 }), fc.nat(), (words, skip) => {
        const start = skip % words.length;
        const count = words.length - start;
        const want = new Uint32Array(2);
        const got = new Uint32Array(2);
        xxh3Words(words, start, count, 0, 123_456_789, want, 0);
        native.words(words, start, count, got, 0);
        expect(got).toEqual(want);
        xxh3Pair(words[0]!, words[start]!, count, skip >>> 0, 0, 123_456_789, want, 0);
        native.pair(words[0]!, words[start]!, count, skip >>> 0, got, 0);
        expect(got).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });

  test('a runtime hash that answers otherwise for the seed is not used; none at all, neither', () => {
    expect(NativeXxh3.for(0, 0, (input, seed) => Bun.hash.xxHash3(input, seed + 1n))).toBeUndefined();
    expect(NativeXxh3.for(0, 0, null)).toBeUndefined();
    // Bun 1.4 reduces a seed to its low 32 bits: a larger one keeps the JavaScript hash.
    const large = NativeXxh3.for(1, 0);
    if (large !== undefined) {
      const want = new Uint32Array(2);
      const got = new Uint32Array(2);
      xxh3Words(Uint32Array.of(1, 2, 3), 0, 3, 1, 0, want, 0);
      large.words(Uint32Array.of(1, 2, 3), 0, 3, got, 0);
      expect(got).toEqual(want);
    }
  });

  test('BlockHasher gives the same keys with and without it, chained from a parent or not', () => {
    const seed = { hi: 0, lo: 7 };
    const withNative = new BlockHasher(seed);
    const withoutNative = new BlockHasher(seed, false);
    expect(withNative.native).toBe(true);
    expect(withoutNative.native).toBe(false);
    fc.assert(
      fc.property(
        fc.uint32Array({ minLength: 0, maxLength: 400 }),
        fc.constantFrom(1, 4, 16, 64),
        fc.option(fc.tuple(fc.nat(), fc.nat())),
        (tokens, blockSize, parent) => {
          const a = new Uint32Array(800);
          const b = new Uint32Array(800);
          const p = parent === null ? undefined : { hi: parent[0] >>> 0, lo: parent[1] >>> 0 };
          expect(withNative.keys(tokens, blockSize, a, p)).toBe(withoutNative.keys(tokens, blockSize, b, p));
          expect(a).toEqual(b);
        },
      ),
      { numRuns: 200 },
    );
  });
});
