import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { xxh3Words } from './xxh3.ts';

/** Outputs of the reference implementation (test/fixtures/kv/xxh3-vectors.py, python3-xxhash). */
const VECTORS = JSON.parse(readFileSync(join(import.meta.dir, '..', '..', 'test', 'fixtures', 'kv', 'xxh3-vectors.json'), 'utf8')) as {
  seeds: string[];
  lengths: number[];
  hashes: string[][];
};
const DATA = new Uint32Array(Uint8Array.from({ length: 5000 }, (_, i) => (i * 131 + 7) % 251).buffer);

const hex = (out: Uint32Array, at = 0): string => out[at]!.toString(16).padStart(8, '0') + out[at + 1]!.toString(16).padStart(8, '0');

describe('xxh3', () => {
  test('matches the reference for every length class and seed', () => {
    const out = new Uint32Array(2);
    const wrong: string[] = [];
    VECTORS.seeds.forEach((seed, s) => {
      const hi = parseInt(seed.slice(0, 8), 16);
      const lo = parseInt(seed.slice(8), 16);
      VECTORS.lengths.forEach((len, i) => {
        xxh3Words(DATA, 0, len / 4, hi, lo, out, 0);
        if (hex(out) !== VECTORS.hashes[s]![i]) wrong.push(`len ${len} seed ${seed}: ${hex(out)} != ${VECTORS.hashes[s]![i]}`);
      });
    });
    expect(wrong).toEqual([]);
    expect(VECTORS.lengths.length * VECTORS.seeds.length).toBeGreaterThan(300);
  });

  test('reads from a word index and writes at an index, leaving the rest alone', () => {
    const shifted = new Uint32Array(DATA.length + 3);
    shifted.set(DATA, 3);
    const out = new Uint32Array(6).fill(7);
    xxh3Words(shifted, 3, 50, 0, 0, out, 2);
    expect(hex(out, 2)).toBe(VECTORS.hashes[0]![VECTORS.lengths.indexOf(200)]!);
    expect([out[0], out[1], out[4], out[5]]).toEqual([7, 7, 7, 7]);
  });

  test('a seed used for long input after another gives its own hash again', () => {
    const out = new Uint32Array(2);
    const at = VECTORS.lengths.indexOf(2048);
    xxh3Words(DATA, 0, 512, 0, 1, out, 0);
    const one = hex(out);
    xxh3Words(DATA, 0, 512, 0xffffffff, 0xffffffff, out, 0);
    xxh3Words(DATA, 0, 512, 0, 1, out, 0);
    expect(hex(out)).toBe(one);
    expect(one).toBe(VECTORS.hashes[1]![at]!);
  });
});
