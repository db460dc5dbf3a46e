import { describe, expect, test } from 'bun:test';
import { LARGE_TEXT_CHARS, turnAfter } from './turns.ts';

describe('turns', () => {
  test('a text below LARGE_TEXT_CHARS costs no turn; one at or above waits for the next', async () => {
    expect(turnAfter(LARGE_TEXT_CHARS - 1)).toBeUndefined();
    const order: string[] = [];
    setImmediate(() => order.push('waiting before'));
    await turnAfter(LARGE_TEXT_CHARS);
    order.push('after the turn');
    expect(order).toEqual(['waiting before', 'after the turn']);
  });
});
