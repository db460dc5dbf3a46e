import { describe, expect, test } from 'bun:test';
import { fillBlock, promptBlocks, verifyBlocks } from './kv-bytes.ts';
import { promptHash, tokenize } from '../model/tokens.ts';

const hash = promptHash(tokenize('a prompt whose cache we simulate'));

describe('simulated KV bytes', () => {
  test('a block depends on the prompt and its index', () => {
    const a = new Uint8Array(1024);
    const b = new Uint8Array(1024);
    fillBlock(hash, 0, a);
    fillBlock(hash, 0, b);
    expect(a).toEqual(b);
    fillBlock(hash, 1, b);
    expect(a).not.toEqual(b);
    fillBlock(promptHash(tokenize('another prompt')), 0, b);
    expect(a).not.toEqual(b);
    // Not a constant fill: many distinct byte values.
    expect(new Set(a).size).toBeGreaterThan(200);
  });

  test('unaligned views and odd sizes give the same bytes as aligned ones', () => {
    const aligned = new Uint8Array(1023);
    fillBlock(hash, 5, aligned);
    const backing = new Uint8Array(1025);
    const unaligned = backing.subarray(1, 1024);
    fillBlock(hash, 5, unaligned);
    expect(unaligned).toEqual(aligned);
  });

  test('promptBlocks lays blocks out one after the other, into a given buffer too', () => {
    const data = promptBlocks(hash, 0, 3, 256);
    const second = new Uint8Array(256);
    fillBlock(hash, 1, second);
    expect(data.subarray(256, 512)).toEqual(second);
    const shared = new Uint8Array(new SharedArrayBuffer(3 * 256));
    expect(promptBlocks(hash, 0, 3, 256, shared)).toEqual(data);
    expect(() => promptBlocks(hash, 0, 3, 256, new Uint8Array(10))).toThrow(/10 bytes/);
  });

  test('verification passes on the right bytes and names the first wrong byte', () => {
    const data = promptBlocks(hash, 0, 4, 512);
    expect(verifyBlocks(hash, 0, data, 512)).toBeUndefined();
    const expected = data[2 * 512 + 17]!;
    data[2 * 512 + 17] = expected ^ 0x5a;
    expect(verifyBlocks(hash, 0, data, 512)).toEqual({ block: 2, offset: 17, expected, actual: expected ^ 0x5a });
    // Blocks in the wrong order are caught too.
    const swapped = promptBlocks(hash, 0, 2, 512);
    const other = promptBlocks(hash, 1, 1, 512);
    swapped.set(other, 0);
    expect(verifyBlocks(hash, 0, swapped, 512)?.block).toBe(0);
  });
});
