import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { depthOverflowAt } from './json-depth.ts';
import { MAX_JSON_DEPTH } from './limits.ts';

const nested = (levels: number, open = '[', close = ']') => open.repeat(levels) + close.repeat(levels);

/** The depth of a value the way the scan counts it: `[]` and `{}` are one level each. */
function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce((max: number, child) => Math.max(max, depthOf(child)), 0);
}

describe('depthOverflowAt', () => {
  test('scalars and shallow values are within any limit', () => {
    expect(depthOverflowAt('1', 0)).toBe(-1);
    expect(depthOverflowAt('"x"', 0)).toBe(-1);
    expect(depthOverflowAt('{"a":[1,{"b":2}]}', 3)).toBe(-1);
  });

  test('exactly at the limit passes; one more level is reported at its bracket', () => {
    expect(depthOverflowAt(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(-1);
    expect(depthOverflowAt(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(MAX_JSON_DEPTH);
    expect(depthOverflowAt('{"a":{"b":{}}}', 2)).toBe(10);
  });

  test('arrays and objects count alike', () => {
    const mixed = '{"a":['.repeat(64) + ']}'.repeat(64);
    expect(depthOverflowAt(mixed, 128)).toBe(-1);
    // The 129th level is the last `[` of the 64th `{"a":[`, after the outer `[`.
    expect(depthOverflowAt(`[${mixed}]`, 128)).toBe(1 + 64 * 6 - 1);
  });

  test('closing brackets bring the depth back down', () => {
    const siblings = Array.from({ length: 1000 }, () => nested(MAX_JSON_DEPTH - 1)).join(',');
    expect(depthOverflowAt(`[${siblings}]`, MAX_JSON_DEPTH)).toBe(-1);
  });

  test('brackets inside strings do not count', () => {
    expect(depthOverflowAt(JSON.stringify({ a: nested(50_000) }), 1)).toBe(-1);
    expect(depthOverflowAt(JSON.stringify(['{[', ']}']), 1)).toBe(-1);
  });

  test('an escaped quote does not end a string', () => {
    // The string is `"[[[` with its quote escaped: the brackets are text.
    expect(depthOverflowAt(String.raw`["\"[[["]`, 1)).toBe(-1);
    expect(depthOverflowAt(String.raw`["\\\"[[["]`, 1)).toBe(-1);
  });

  test('an escaped backslash before a quote does end the string', () => {
    // `"\\"` is a string holding one backslash; the brackets after it are structure.
    expect(depthOverflowAt(String.raw`["\\",[[1]]]`, 2)).toBe(7);
    expect(depthOverflowAt(String.raw`["\\\\",[[1]]]`, 2)).toBe(9);
  });

  test('other escapes and unicode inside strings are skipped', () => {
    expect(depthOverflowAt(JSON.stringify({ s: 'tab\t nl\n \u0000 é 漢字 🙂 \\[' }), 1)).toBe(-1);
  });

  test('a huge flat array is fine', () => {
    const flat = `[${Array.from({ length: 1_000_000 }, (_, i) => i).join(',')}]`;
    expect(depthOverflowAt(flat, 1)).toBe(-1);
  });

  test('malformed text is left to JSON.parse, and the scan still ends', () => {
    expect(depthOverflowAt('"unterminated [[[[', 1)).toBe(-1);
    expect(depthOverflowAt(']]]]', 1)).toBe(-1);
    expect(depthOverflowAt('[[[', 2)).toBe(2);
    expect(depthOverflowAt('', 0)).toBe(-1);
  });

  test('agrees with the depth of the value for any JSON text', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, limit) => {
        const text = JSON.stringify(value);
        expect(depthOverflowAt(text, limit) === -1).toBe(depthOf(value) <= limit);
      }),
      { numRuns: 500 },
    );
  });
});
