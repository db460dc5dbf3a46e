import { describe, expect, test } from 'bun:test';
import { PdlinkError } from '../core/errors.ts';
import { parseJsonExact } from '../core/exact-json.ts';
import { parseCompletionBody, stringifyBody } from './completions.ts';

function issuesOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof PdlinkError) {
      expect(err.status).toBe(400);
      return [...err.issues];
    }
    throw err;
  }
  throw new Error('expected a 400');
}

describe('parseCompletionBody', () => {
  test('returns the original object, unknown fields untouched', () => {
    const body = { model: 'm', prompt: ['a', 'b'], stream: true, max_tokens: 5, top_k: 3, extra: { deep: [1] } };
    expect(parseCompletionBody('completions', body)).toBe(body as never);
    const chat = { model: 'm', messages: [{ role: 'user', content: 'x' }], stream: null, max_tokens: null };
    expect(parseCompletionBody('chat', chat)).toBe(chat as never);
  });

  test('prompt may be text, texts, token ids or batches of them', () => {
    for (const prompt of ['x', ['x', 'y'], [1, 2, 3], [[1], [2, 3]]])
      expect(() => parseCompletionBody('completions', { model: 'm', prompt })).not.toThrow();
  });

  test('names every offending field at once', () => {
    const issues = issuesOf(() => parseCompletionBody('completions', { model: '', stream: 1, max_tokens: -1 }));
    expect(issues.map((i) => i.path).sort()).toEqual(['max_tokens', 'model', 'prompt', 'stream']);
    expect(issues.find((i) => i.path === 'prompt')?.message).toBe('is required');
  });

  test('chat needs a non-empty messages array', () => {
    expect(issuesOf(() => parseCompletionBody('chat', { model: 'm', messages: [] }))[0]?.path).toBe('messages');
    expect(issuesOf(() => parseCompletionBody('chat', { model: 'm', messages: {} }))[0]?.path).toBe('messages');
  });

  test('a body that is not an object is named as the whole body', () => {
    for (const body of [null, [], 'text', 3])
      expect(issuesOf(() => parseCompletionBody('completions', body))).toEqual([{ path: '', message: 'must be a JSON object' }]);
  });

  test('max_tokens beyond 2^53 is rejected, not rounded', () => {
    const body = parseJsonExact('{"model":"m","prompt":"p","max_tokens":99999999999999999999}');
    expect(issuesOf(() => parseCompletionBody('completions', body))[0]).toEqual({
      path: 'max_tokens',
      message: 'must be a positive integer',
    });
  });
});

describe('stringifyBody', () => {
  test('writes integers beyond 2^53 with their original digits, nested ones included', () => {
    const body = parseJsonExact('{"seed":18446744073709551615,"a":{"b":[-9007199254740993]},"c":1.5}') as Record<string, unknown>;
    expect(stringifyBody(body)).toBe('{"seed":18446744073709551615,"a":{"b":[-9007199254740993]},"c":1.5}');
  });
});
