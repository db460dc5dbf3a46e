import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BlockHasher, keyHex } from './block-keys.ts';

const VECTORS = JSON.parse(readFileSync(join(import.meta.dir, '..', '..', 'test', 'fixtures', 'kv', 'xxh3-vectors.json'), 'utf8')) as {
  rolling: { tokens: number; block_size: number; keys: string[] };
};

describe('BlockHasher', () => {
  const { rolling } = VECTORS;
  const tokens = Array.from({ length: rolling.tokens }, (_, i) => i);

  test('keys are the standard rolling XXH3 keys (reference computed with python3-xxhash)', () => {
    const out = new Uint32Array(64);
    const n = new BlockHasher().keys(tokens, rolling.block_size, out);
    expect(n).toBe(rolling.keys.length);
    expect(Array.from({ length: n }, (_, i) => keyHex(out, 2 * i))).toEqual(rolling.keys);
  });

  test('a sequence continued from a parent key gets the keys the whole sequence has', () => {
    const hasher = new BlockHasher();
    const whole = new Uint32Array(64);
    hasher.keys(tokens, 4, whole);
    const tail = new Uint32Array(64);
    const n = hasher.keys(tokens.slice(12), 4, tail, { hi: whole[4]!, lo: whole[5]! });
    expect(Array.from({ length: n }, (_, i) => keyHex(tail, 2 * i))).toEqual(rolling.keys.slice(3));
  });

  test('number arrays and Uint32Arrays give the same keys; a partial block is not keyed', () => {
    const hasher = new BlockHasher();
    const a = new Uint32Array(8);
    const b = new Uint32Array(8);
    expect(hasher.keys([1, 2, 3, 4, 5], 2, a)).toBe(2);
    expect(hasher.keys(Uint32Array.of(1, 2, 3, 4, 5), 2, b)).toBe(2);
    expect([...a]).toEqual([...b]);
    expect(hasher.keys([1], 2, a)).toBe(0);
  });

  test('a seed changes every key', () => {
    const a = new Uint32Array(4);
    const b = new Uint32Array(4);
    new BlockHasher().keys([1, 2, 3, 4], 2, a);
    new BlockHasher({ hi: 0, lo: 1 }).keys([1, 2, 3, 4], 2, b);
    expect(keyHex(a, 0)).not.toBe(keyHex(b, 0));
    expect(keyHex(a, 2)).not.toBe(keyHex(b, 2));
  });

  test('a bad token id is refused with its index; a too-small output is refused', () => {
    const hasher = new BlockHasher();
    expect(() => hasher.keys([1, -2], 2, new Uint32Array(2), undefined, 'promptTokens')).toThrow(
      'promptTokens[1]: must be an integer in [0, 4294967295]',
    );
    expect(() => hasher.keys([1, 2.5], 2, new Uint32Array(2))).toThrow('tokens[1]');
    expect(() => hasher.keys([1, 2, 3, 4], 2, new Uint32Array(2))).toThrow('out: must hold 4 words');
  });
});
