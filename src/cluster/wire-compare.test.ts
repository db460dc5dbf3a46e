import { describe, expect, test } from 'bun:test';
import { UnsafeInteger } from '../core/exact-json.ts';
import { MAX_JSON_DEPTH } from '../core/limits.ts';
import { wireEqual } from './wire-compare.ts';

/** `levels` arrays nested in one another, built without recursion. */
function nestedArrays(levels: number): unknown[] {
  let value: unknown[] = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

describe('wireEqual', () => {
  test.each([
    [1, 1, true],
    [1, 2, false],
    ['a', 'a', true],
    [null, null, true],
    [null, {}, false],
    [[], {}, false],
    [{}, [], false],
    [[1, [2]], [1, [2]], true],
    [[1, 2], [1], false],
    [{ a: 1, b: 2 }, { b: 2, a: 1 }, true],
    [{ a: 1 }, { a: 1, b: undefined }, false],
    [{ a: 1, c: 3 }, { a: 1, b: 3 }, false],
    [new UnsafeInteger('9007199254740993'), new UnsafeInteger('9007199254740993'), true],
    [new UnsafeInteger('9007199254740993'), new UnsafeInteger('9007199254740995'), false],
    [new UnsafeInteger('9007199254740993'), {}, false],
  ])('%p vs %p → %p', (a, b, equal) => {
    expect(wireEqual(a, b)).toBe(equal);
    expect(wireEqual(b, a)).toBe(equal);
  });

  test('stops at the limit instead of walking values deeper than the stack allows', () => {
    expect(wireEqual(nestedArrays(200_000), nestedArrays(200_000))).toBe(false);
    expect(wireEqual(nestedArrays(MAX_JSON_DEPTH), nestedArrays(MAX_JSON_DEPTH))).toBe(true);
    const shared = nestedArrays(200_000);
    expect(wireEqual(shared, shared)).toBe(true);
  });
});
