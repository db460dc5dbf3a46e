import { describe, expect, test } from 'bun:test';
import { isMeasuredJson, parseJsonExact, parseJsonMeasured, UnsafeInteger } from './exact-json.ts';
import { MAX_JSON_DEPTH } from './limits.ts';

describe('parseJsonExact', () => {
  test('refuses deep text before parsing it, whoever sent it', () => {
    expect(() => parseJsonExact(`{"kv_transfer_params":${'['.repeat(500)}${']'.repeat(500)}}`)).toThrow(
      `deeper than ${MAX_JSON_DEPTH} levels`,
    );
    expect(parseJsonExact('{"a":[[1]]}')).toEqual({ a: [[1]] });
  });

  test('parseJsonMeasured vouches for what it returned; parseJsonExact and values from elsewhere are not marked', () => {
    expect(isMeasuredJson(parseJsonMeasured('{"instances":[]}'))).toBe(true);
    expect(isMeasuredJson(parseJsonMeasured('[1]'))).toBe(true);
    expect(isMeasuredJson(parseJsonMeasured('7'))).toBe(false);
    expect(isMeasuredJson(parseJsonExact('{"instances":[]}'))).toBe(false);
    expect(isMeasuredJson(JSON.parse('{"instances":[]}'))).toBe(false);
    expect(isMeasuredJson({ instances: [] })).toBe(false);
    // The same checks and errors as parseJsonExact.
    expect(() => parseJsonMeasured(`[${'['.repeat(MAX_JSON_DEPTH)}]]`)).toThrow(`deeper than ${MAX_JSON_DEPTH} levels`);
    expect(() => parseJsonMeasured('')).toThrow();
  });

  test('integers beyond 2^53-1 become markers with their digits; safe ones and fractions stay numbers', () => {
    const value = parseJsonExact('{"id": 9007199254740993, "n": -18446744073709551615, "ok": 9007199254740991, "f": 1.5}') as Record<
      string,
      unknown
    >;
    expect(value.id).toEqual(new UnsafeInteger('9007199254740993'));
    expect(value.n).toEqual(new UnsafeInteger('-18446744073709551615'));
    expect(value.ok).toBe(9007199254740991);
    expect(value.f).toBe(1.5);
  });

  test('empty and malformed text are 400s with their own messages', () => {
    expect(() => parseJsonExact('  ')).toThrow('request body is empty');
    expect(() => parseJsonExact('{"a":')).toThrow('request body is not valid JSON');
  });
});

describe('UnsafeInteger', () => {
  test('plain JSON.stringify writes it with its original digits, at any depth', () => {
    const text = '{"seed":18446744073709551615,"a":{"b":[-9007199254740993]},"c":1.5}';
    expect(JSON.stringify(parseJsonExact(text))).toBe(text);
    expect(JSON.stringify({ id: new UnsafeInteger('18446744073709551615') })).toBe('{"id":18446744073709551615}');
  });

  // Why no replacer is needed to write markers: toJSON runs first, so a replacer testing
  // `instanceof UnsafeInteger` never matches and would be dead code.
  test('a replacer is handed what toJSON returned, never the marker', () => {
    const seen: unknown[] = [];
    JSON.stringify({ id: new UnsafeInteger('9007199254740993') }, (_key, value: unknown) => {
      seen.push(value);
      return value;
    });
    expect(seen.some((value) => value instanceof UnsafeInteger)).toBe(false);
  });
});
