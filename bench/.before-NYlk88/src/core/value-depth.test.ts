import { describe, expect, test } from 'bun:test';
import { UnsafeInteger } from './exact-json.ts';
import { depthOverflowPath } from './value-depth.ts';

function nestedArrays(levels: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

describe('depthOverflowPath', () => {
  test('values within the limit, exactly at it included', () => {
    expect(depthOverflowPath(7, 0)).toBeUndefined();
    expect(depthOverflowPath({ a: [1, { b: 'x' }] }, 3)).toBeUndefined();
    expect(depthOverflowPath(nestedArrays(128), 128)).toBeUndefined();
  });

  test('one level more is reported with the path down to it', () => {
    expect(depthOverflowPath({ a: [1, { b: [] }] }, 3)).toEqual(['a', 1, 'b']);
    expect(depthOverflowPath(nestedArrays(129), 128)).toEqual(Array.from({ length: 128 }, () => 0));
  });

  test('a value far deeper than the stack allows is measured without walking it', () => {
    expect(depthOverflowPath({ x: nestedArrays(200_000) }, 4)).toEqual(['x', 0, 0, 0]);
  });

  test('an UnsafeInteger marker is a number, not a level', () => {
    expect(depthOverflowPath({ a: [new UnsafeInteger('18446744073709551615')] }, 2)).toBeUndefined();
  });

  test('a cyclic value is infinitely deep and ends the walk at the limit', () => {
    const loop: Record<string, unknown> = {};
    loop['self'] = loop;
    expect(depthOverflowPath(loop, 3)).toEqual(['self', 'self', 'self']);
  });
});
