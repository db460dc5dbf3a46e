import { describe, expect, test } from 'bun:test';
import { promptText } from '../../../harness/prompt-text.ts';
import { blockHashes, PrefixCache } from './prefix-cache.ts';
import { chatTemplate, tokenize } from '../model/tokens.ts';

describe('blockHashes', () => {
  test('chains: a shared prefix gives shared hashes, and one early change changes every later block', () => {
    const a = blockHashes([1, 2, 3, 4, 5, 6, 7], 2);
    const b = blockHashes([1, 2, 3, 4, 9, 9], 2);
    const c = blockHashes([0, 2, 3, 4, 5, 6], 2);
    expect(a).toHaveLength(3); // the seventh token is a partial block, never cached
    expect(b.slice(0, 2)).toEqual(a.slice(0, 2));
    expect(b[2]).not.toBe(a[2]);
    expect(c.every((h, i) => h !== a[i])).toBe(true);
  });
});

describe('PrefixCache', () => {
  test('admit returns the leading cached tokens and counts them; hold caches without counting', () => {
    const cache = new PrefixCache(100);
    expect(cache.admit([1, 2, 3, 4, 5, 6], 2)).toBe(0);
    expect(cache.admit([1, 2, 3, 4, 7, 8, 9], 2)).toBe(4);
    cache.hold([5, 5, 5, 5], 2);
    expect(cache.admit([5, 5, 5, 5], 2)).toBe(4);
    expect(cache.stats()).toEqual({ lookups: 3, prompt_tokens: 17, hit_tokens: 8, hit_blocks: 4, blocks: 6, capacity: 100 });
  });

  test("evicts beyond its capacity the least recently used block, a prompt's deepest block before its root", () => {
    const cache = new PrefixCache(2);
    cache.admit([1, 1], 1); // blocks A(1), B(1,1); A, the shared root, is the more recent
    cache.admit([2], 1); // C; B, the leaf, is evicted
    expect(cache.stats().blocks).toBe(2);
    expect(cache.admit([1, 1], 1)).toBe(1); // A is still there, B is not
    expect(cache.admit([2], 1)).toBe(0); // C went when B came back
  });

  test('the listener hears runs of new blocks with their parents, evictions and a clear', () => {
    const cache = new PrefixCache(3);
    const heard: string[] = [];
    cache.listener = {
      stored: (hashes, from, to, tokens, bt) =>
        heard.push(`stored ${from}-${to} parent ${from > 0 ? hashes[from - 1] === blockHashes(tokens, bt)[from - 1] : 'none'}`),
      removed: (hashes) => heard.push(`removed ${hashes.length}`),
      cleared: () => heard.push('cleared'),
    };
    cache.admit([1, 2], 1);
    cache.admit([1, 2, 3], 1);
    cache.admit([7, 8], 1);
    cache.clear();
    expect(heard).toEqual(['stored 0-2 parent none', 'stored 2-3 parent true', 'stored 0-2 parent none', 'removed 2', 'cleared']);
    expect(cache.stats().blocks).toBe(0);
  });

  test('capacity 0 caches nothing', () => {
    const cache = new PrefixCache(0);
    cache.admit([1, 2], 1);
    expect(cache.admit([1, 2], 1)).toBe(0);
  });

  test("the harness's prompts sharing leading block hashes hit the simulator's cache for exactly the shared part", () => {
    // Two trace requests: hashes [11, 22, 33] and [11, 22, 44] at 512 tokens a hash share 1024 tokens.
    const first = promptText([11, 22, 33], 512, 1536, 0);
    const second = promptText([11, 22, 44], 512, 1536, 1);
    const other = promptText([55, 22, 33], 512, 1536, 2);
    for (const render of [(t: string) => t, (t: string) => chatTemplate([{ role: 'user', content: t }])]) {
      const cache = new PrefixCache(10_000);
      expect(cache.admit(tokenize(render(first)), 16)).toBe(0);
      expect(cache.admit(tokenize(render(second)), 16)).toBe(1024);
      expect(cache.admit(tokenize(render(other)), 16)).toBe(0);
    }
  });
});
