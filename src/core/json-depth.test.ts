import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { depthOverflowAt, scanJsonText, WITHIN_LIMIT, WITHIN_LIMIT_LONG_DIGITS } from './json-depth.ts';
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

describe('scanJsonText', () => {
  test('notes a run of 16+ digits outside strings, and only there', () => {
    expect(scanJsonText('{"seed":18446744073709551615}', 4)).toBe(WITHIN_LIMIT_LONG_DIGITS);
    expect(scanJsonText('[-1234567890123456]', 4)).toBe(WITHIN_LIMIT_LONG_DIGITS);
    expect(scanJsonText('[123456789012345,1.5e300]', 4)).toBe(WITHIN_LIMIT);
    expect(scanJsonText('{"id":"18446744073709551615","k":1}', 4)).toBe(WITHIN_LIMIT);
    expect(scanJsonText(`{"text":"${'9'.repeat(100)}"}`, 4)).toBe(WITHIN_LIMIT);
  });

  test('a bracket too deep wins over a long digit run, and its index is the same as depthOverflowAt', () => {
    const text = '[12345678901234567890,[[1]]]';
    expect(scanJsonText(text, 2)).toBe(depthOverflowAt(text, 2));
    expect(scanJsonText(text, 2)).toBe(text.indexOf('[[') + 1);
  });

  test('escaped quotes and brackets in strings of every length around the short-string walk', () => {
    for (let pad = 0; pad <= 70; pad++) {
      for (const escape of ['\\"', '\\\\', '\\u0022']) {
        const inner = `${'a'.repeat(pad)}${escape}[[[{`;
        const text = `[{"s":"${inner}","n":12345678901234567}]`;
        expect(JSON.parse(text)).toBeDefined();
        expect(scanJsonText(text, 2)).toBe(WITHIN_LIMIT_LONG_DIGITS);
        expect(scanJsonText(text, 1)).toBe(1);
      }
    }
  });

  test("agrees with depthOverflowAt and with the value's depth on generated JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 7 }), (value, limit) => {
        const text = JSON.stringify(value);
        const at = scanJsonText(text, limit);
        expect(at >= 0).toBe(depthOf(value) > limit);
        expect(Math.max(at, -1)).toBe(depthOverflowAt(text, limit));
        // Outside strings, any run of 16 digits counts (the reviver then decides which are integers).
        const outsideStrings = text.replace(/"(?:[^"\\]|\\.)*"/g, '""');
        if (at < 0) expect(at === WITHIN_LIMIT_LONG_DIGITS).toBe(/\d{16}/.test(outsideStrings));
      }),
    );
  });
});
