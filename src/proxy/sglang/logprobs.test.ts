import { describe, expect, test } from 'bun:test';
import { mergePromptLogprobs } from './logprobs.ts';

describe('prompt logprobs from P', () => {
  test("P's input_token_logprobs go in front of D's", () => {
    const p = {
      meta_info: {
        input_token_logprobs: [
          [-1, 5],
          [-2, 6],
        ],
      },
    };
    const d = { text: 'x', meta_info: { input_token_logprobs: [[-3, 7]], id: 'd' } };
    expect(mergePromptLogprobs(p, d)).toEqual({
      text: 'x',
      meta_info: {
        input_token_logprobs: [
          [-1, 5],
          [-2, 6],
          [-3, 7],
        ],
        id: 'd',
      },
    });
  });

  test('a batched answer is merged item by item', () => {
    const p = [{ meta_info: { input_token_logprobs: [1] } }, { meta_info: { input_token_logprobs: [2] } }];
    const d = [{ meta_info: {} }, { meta_info: { input_token_logprobs: [3] } }];
    expect(mergePromptLogprobs(p, d)).toEqual([
      { meta_info: { input_token_logprobs: [1] } },
      { meta_info: { input_token_logprobs: [2, 3] } },
    ]);
  });

  test("D's answer is unchanged when P has no logprobs or D no meta_info", () => {
    const d = { choices: [] };
    expect(mergePromptLogprobs({ meta_info: { input_token_logprobs: [1] } }, d)).toBe(d);
    const withMeta = { meta_info: { id: 1 } };
    expect(mergePromptLogprobs(undefined, withMeta)).toBe(withMeta);
  });
});
