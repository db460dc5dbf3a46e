import { describe, expect, test } from 'bun:test';
import { blockText, BYTES_PER_TOKEN, promptText } from './prompt-text.ts';

describe('promptText', () => {
  test('equal hashes give equal text, different hashes different text', () => {
    expect(blockText(42, 16)).toBe(blockText(42, 16));
    expect(blockText(42, 16)).not.toBe(blockText(43, 16));
    expect(blockText(42, 16)).toHaveLength(16 * BYTES_PER_TOKEN);
  });

  test('prompts sharing leading hashes share their leading text, block by block', () => {
    const a = promptText([1, 2, 3], 8, 24, 0);
    const b = promptText([1, 2, 9], 8, 24, 1);
    expect(a.slice(0, 16 * BYTES_PER_TOKEN)).toBe(b.slice(0, 16 * BYTES_PER_TOKEN));
    expect(a.slice(16 * BYTES_PER_TOKEN)).not.toBe(b.slice(16 * BYTES_PER_TOKEN));
  });

  test('the prompt has exactly inputTokens tokens: cut in the last block, padded past the hashes', () => {
    expect(promptText([1, 2], 8, 11, 0)).toHaveLength(11 * BYTES_PER_TOKEN);
    const padded = promptText([1], 8, 20, 5);
    expect(padded).toHaveLength(20 * BYTES_PER_TOKEN);
    expect(padded.startsWith(blockText(1, 8))).toBe(true);
    expect(padded).not.toBe(promptText([1], 8, 20, 6));
  });
});
