import { describe, expect, test } from 'bun:test';
import { blocksFor, CHAT_TOKENS_PER_MESSAGE, promptOf, tokenizedPrompt } from './prompt.ts';

describe('promptOf', () => {
  test('token ids are counted exactly and handed to the scheduler', () => {
    expect(promptOf('completions', { prompt: [5, 6, 7] })).toEqual({ tokens: [5, 6, 7], tokenCount: 3, estimated: false, fewestTokens: 3 });
    expect(promptOf('completions', { prompt: [[1, 2], [3]] })).toEqual({ tokenCount: 3, estimated: false, fewestTokens: 3 });
  });

  test('text is estimated at one token per 3 UTF-8 bytes, and is at least one token per 16', () => {
    expect(promptOf('completions', { prompt: 'abcdef' })).toEqual({ text: 'abcdef', tokenCount: 2, estimated: true, fewestTokens: 1 });
    expect(promptOf('completions', { prompt: 'x'.repeat(160) })).toMatchObject({ tokenCount: 54, fewestTokens: 10 });
    // Three CJK characters are nine bytes.
    expect(promptOf('completions', { prompt: '你好吗' }).tokenCount).toBe(3);
    expect(promptOf('completions', { prompt: ['ab', 'cd'] })).toEqual({ text: 'ab\ncd', tokenCount: 2, estimated: true, fewestTokens: 1 });
  });

  test('chat counts text content and text parts, plus a template allowance per message', () => {
    const info = promptOf('chat', {
      messages: [
        { role: 'system', content: 'abc' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'def' },
            { type: 'image_url', image_url: { url: 'x' } },
          ],
        },
        null,
      ],
    });
    expect(info.text).toBe('abc\ndef');
    expect(info.tokenCount).toBe(3 + 3 * CHAT_TOKENS_PER_MESSAGE);
  });
});

test('blocksFor rounds up', () => {
  expect(blocksFor(0, 16)).toBe(0);
  expect(blocksFor(16, 16)).toBe(1);
  expect(blocksFor(17, 16)).toBe(2);
});

describe('tokenizedPrompt', () => {
  test("the tokenizer's ids make the count exact; ids the client sent are kept", () => {
    const text = promptOf('completions', { model: 'm', prompt: 'some text' });
    expect(tokenizedPrompt(text, [1, 2, 3])).toEqual({
      text: 'some text',
      tokens: [1, 2, 3],
      tokenCount: 3,
      estimated: false,
      fewestTokens: 3,
    });
    expect(tokenizedPrompt(text, undefined)).toBe(text);
    const ids = promptOf('completions', { model: 'm', prompt: [7, 8] });
    expect(tokenizedPrompt(ids, [1])).toBe(ids);
  });
});
