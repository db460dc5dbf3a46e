import { describe, expect, test } from 'bun:test';
import { blocksNeeded, chatTemplate, generatedTokens, hashHex, promptHash, tokenize, VOCAB_SIZE } from './tokens.ts';

function fnv64Reference(tokens: readonly number[]): bigint {
  let h = 0xcbf29ce484222325n;
  for (const id of tokens) {
    for (let shift = 0; shift < 32; shift += 8) {
      h ^= BigInt((id >>> shift) & 0xff);
      h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
    }
  }
  return h;
}

describe('simulated tokenizer', () => {
  test('four UTF-8 bytes per token, ids inside the vocabulary', () => {
    expect(tokenize('')).toEqual([]);
    expect(tokenize('abcd')).toHaveLength(1);
    expect(tokenize('abcde')).toHaveLength(2);
    // 'é' is two bytes: 6 characters → 12 bytes → 3 tokens.
    expect(tokenize('éééééé')).toHaveLength(3);
    for (const id of tokenize('the quick brown fox jumps over the lazy dog')) {
      expect(id).toBeGreaterThanOrEqual(0);
      expect(id).toBeLessThan(VOCAB_SIZE);
    }
    expect(tokenize('same text')).toEqual(tokenize('same text'));
  });

  test('chat template wraps each message and opens the assistant turn', () => {
    expect(
      chatTemplate([
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      ]),
    ).toBe('<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n');
    expect(chatTemplate([{ role: 'user', content: null }])).toBe('<|user|>\n\n<|assistant|>\n');
  });

  test('the prompt hash is 64-bit FNV-1a over the ids', () => {
    for (const tokens of [[], [0], [1, 2, 3], tokenize('a longer prompt with several tokens in it'), [31999, 65535, 0xffffffff]]) {
      expect(BigInt(`0x${hashHex(promptHash(tokens))}`)).toBe(fnv64Reference(tokens));
    }
  });

  test('generated text depends on the prompt only, token by token', () => {
    const a = promptHash(tokenize('prompt a'));
    const b = promptHash(tokenize('prompt b'));
    expect(generatedTokens(a, 8)).toEqual(generatedTokens(a, 8));
    expect(generatedTokens(a, 8).join('')).not.toBe(generatedTokens(b, 8).join(''));
    // A longer answer starts with the shorter one: P's single token is D's first.
    expect(generatedTokens(a, 3)).toEqual(generatedTokens(a, 8).slice(0, 3));
    for (const piece of generatedTokens(a, 20)) expect(piece).toMatch(/^ [a-z]+$/);
  });

  test('blocks needed round up', () => {
    expect(blocksNeeded(0, 16)).toBe(0);
    expect(blocksNeeded(16, 16)).toBe(1);
    expect(blocksNeeded(17, 16)).toBe(2);
  });
});
