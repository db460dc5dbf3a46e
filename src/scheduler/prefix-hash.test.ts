import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../core/errors.ts';
import { DEFAULT_BLOCK_SIZE, MAX_HASHED_BLOCKS, prefixHashes } from './prefix-hash.ts';

const tokens = (n: number, start = 0) => Array.from({ length: n }, (_, i) => (start + i) % 50_000);

describe('prefixHashes', () => {
  test('one hash per full block; a partial last block is not hashed', () => {
    expect(prefixHashes({ promptTokens: tokens(3 * 4 + 3) }, 4)).toHaveLength(3);
    expect(prefixHashes({ promptTokens: tokens(3) }, 4)).toEqual([]);
    expect(prefixHashes({}, 4)).toEqual([]);
    expect(DEFAULT_BLOCK_SIZE).toBe(128);
  });

  test('equal prefixes give equal hashes up to where they diverge, and none after (chain)', () => {
    const a = tokens(16);
    const b = [...tokens(8), ...tokens(8, 900)];
    const ha = prefixHashes({ promptTokens: a }, 4);
    const hb = prefixHashes({ promptTokens: b }, 4);
    expect(hb.slice(0, 2)).toEqual(ha.slice(0, 2));
    expect(hb[2]).not.toBe(ha[2]);
    // Same block content at a later position hashes differently: the chain carries the prefix.
    const shifted = prefixHashes({ promptTokens: [...tokens(4, 500), ...a.slice(0, 4)] }, 4);
    expect(shifted[1]).not.toBe(ha[0]);
  });

  test('hashes are deterministic, distinct across many prompts, and exact integers', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 2_000; i++) {
      const [h] = prefixHashes({ promptTokens: tokens(4, i * 7) }, 4);
      expect(Number.isSafeInteger(h)).toBe(true);
      seen.add(h as number);
    }
    expect(seen.size).toBe(2_000);
    expect(prefixHashes({ promptTokens: tokens(8) }, 4)).toEqual(prefixHashes({ promptTokens: tokens(8) }, 4));
  });

  test('text is hashed from UTF-8 bytes, blockSize 4-byte words per block', () => {
    const text = 'système: réponds brièvement. '.repeat(10);
    const bytes = new TextEncoder().encode(text).length;
    const hashes = prefixHashes({ promptText: text }, 8);
    expect(hashes).toHaveLength(Math.floor(bytes / 32));
    expect(prefixHashes({ promptText: `${text}more` }, 8).slice(0, hashes.length)).toEqual(hashes);
    expect(prefixHashes({ promptText: `X${text}` }, 8)[0]).not.toBe(hashes[0]);
  });

  test('text hashes are its UTF-8 bytes read as little-endian 32-bit words, whatever came before', () => {
    // The words as token ids give the same chain: an encoding of its own, independent of the one kept between calls.
    const asWords = (text: string) => {
      const bytes = new TextEncoder().encode(text);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      return Array.from({ length: Math.floor(bytes.length / 4) }, (_, w) => view.getUint32(w * 4, true));
    };
    const long = 'a long system prompt, with ünïcödé and 🙂 in it; '.repeat(400); // past the first buffer
    const huge = 'a prompt longer than the buffer kept between calls may grow to; '.repeat(6_000);
    const texts = [long, 'short', 'x'.repeat(33), 'x'.repeat(31), 'é'.repeat(11), '🙂'.repeat(4), long.slice(0, 700), huge, long, ''];
    for (const text of texts) {
      const expected = prefixHashes({ promptTokens: asWords(text) }, 8);
      expect(prefixHashes({ promptText: text }, 8)).toEqual(expected);
    }
    expect(prefixHashes({ promptText: long }, 8).length).toBeGreaterThan(100);
    // Under one block of bytes: nothing to hash (8 words are 32 bytes; 15 two-byte characters are 30).
    expect(prefixHashes({ promptText: 'ä'.repeat(15) }, 8)).toEqual([]);
    expect(prefixHashes({ promptText: 'ä'.repeat(16) }, 8)).toHaveLength(1);
  });

  test('token ids win over text when both are given', () => {
    expect(prefixHashes({ promptTokens: tokens(4), promptText: 'a'.repeat(64) }, 4)).toEqual(prefixHashes({ promptTokens: tokens(4) }, 4));
  });

  test.each([[-1], [1.5], [2 ** 32], [Number.NaN], ['7' as unknown as number]])('rejects token id %p naming its index', (bad) => {
    let caught: unknown;
    try {
      prefixHashes({ promptTokens: [1, 2, bad] }, 4);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PdlinkError);
    expect((caught as PdlinkError).issues[0]).toEqual({ path: 'promptTokens[2]', message: 'must be an integer in [0, 4294967295]' });
  });

  test('only the first MAX_HASHED_BLOCKS blocks are hashed, from ids or text; ids past them are still checked', () => {
    const block = 4;
    const ids = tokens((MAX_HASHED_BLOCKS + 10) * block);
    const hashed = prefixHashes({ promptTokens: ids }, block);
    expect(hashed).toHaveLength(MAX_HASHED_BLOCKS);
    expect(hashed).toEqual(prefixHashes({ promptTokens: ids.slice(0, MAX_HASHED_BLOCKS * block) }, block));
    const bad = [...ids];
    bad[bad.length - 1] = -1;
    expect(() => prefixHashes({ promptTokens: bad }, block)).toThrow(PdlinkError);

    const text = 'é'.repeat(MAX_HASHED_BLOCKS * block * 4);
    const fromText = prefixHashes({ promptText: text }, block);
    expect(fromText).toHaveLength(MAX_HASHED_BLOCKS);
    expect(fromText).toEqual(prefixHashes({ promptText: text.slice(0, MAX_HASHED_BLOCKS * block * 2) }, block));
    // A surrogate pair across the cut is kept whole: hashed as its own bytes, not as U+FFFD.
    const before = 'a'.repeat(MAX_HASHED_BLOCKS * block * 4 - 1);
    const astral = prefixHashes({ promptText: `${before}😀${'b'.repeat(4096)}` }, block);
    const replaced = prefixHashes({ promptText: `${before}\uFFFD${'b'.repeat(4096)}` }, block);
    expect(astral.at(-1)).not.toBe(replaced.at(-1));
    expect(astral.slice(0, -1)).toEqual(replaced.slice(0, -1));
  });
});
