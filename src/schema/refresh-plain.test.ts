import { describe, expect, test } from 'bun:test';
import { isMeasuredJson, parseJsonExact, UnsafeInteger } from '../core/exact-json.ts';
import { MAX_JSON_DEPTH } from '../core/limits.ts';
import { exampleSnapshot, SEED_REFRESH_BODY, seedExample } from '../../test/doubles/refresh-examples.ts';
import { isPlainSnapshot, parseRefreshText } from './refresh-plain.ts';
import { validateRefresh } from './refresh.ts';

/** What parseJsonExact throws for `text`, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('parseRefreshText', () => {
  test('a valid snapshot with only known keys is parsed once, plain, and vouched for', () => {
    for (const text of [SEED_REFRESH_BODY, JSON.stringify(exampleSnapshot(64))]) {
      const value = parseRefreshText(text);
      expect(value).toEqual(JSON.parse(text));
      expect(isPlainSnapshot(value)).toBe(true);
      expect(isMeasuredJson(value)).toBe(true);
      expect(validateRefresh(value)).toEqual({ ok: true, snapshot: value as never });
    }
  });

  test('an unknown key anywhere sends the body the exact way, keeping huge integers exact', () => {
    const places: ((b: ReturnType<typeof seedExample>) => Record<string, unknown>)[] = [
      (b) => b as never,
      (b) => b.instances[0]!,
      (b) => b.instances[0]!.static_info,
      (b) => b.instances[1]!.dynamic_info,
    ];
    for (const place of places) {
      const body = seedExample();
      place(body).extra = 0;
      const text = JSON.stringify(body).replace('"extra":0', '"extra":18446744073709551615');
      const value = parseRefreshText(text) as Record<string, unknown>;
      expect(isPlainSnapshot(value)).toBe(false);
      expect(value).toEqual(parseJsonExact(text) as never);
      expect(JSON.stringify(value)).toContain('"extra":18446744073709551615');
      expect(JSON.stringify(value)).toBe(text);
    }
    const exact = parseRefreshText(JSON.stringify({ ...seedExample(), extra: 1 }).replace('"extra":1', '"extra":18446744073709551615'));
    expect((exact as { extra: unknown }).extra).toBeInstanceOf(UnsafeInteger);
  });

  test('a body too deep, empty or malformed gets the errors parseJsonExact gives', () => {
    const body = seedExample() as unknown as Record<string, unknown>;
    body.extra = 0;
    const deep = JSON.stringify(body).replace('"extra":0', `"extra":${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`);
    for (const text of [deep, '', '   ', '{"ids":', '[1,]']) {
      const expected = thrown(() => parseJsonExact(text));
      expect(expected).toBeDefined();
      expect(thrown(() => parseRefreshText(text))).toEqual(expected);
    }
  });

  test('an invalid snapshot is not vouched for; validateRefresh still explains it', () => {
    const body = seedExample();
    body.instances[0]!.static_info.role = 1;
    const value = parseRefreshText(JSON.stringify(body));
    expect(isPlainSnapshot(value)).toBe(false);
    const result = validateRefresh(value);
    expect(result.ok).toBe(false);
  });

  test('JSON.parse builds very deep values without recursing, so parsing before measuring is safe', () => {
    const levels = 200_000;
    expect(() => JSON.parse('['.repeat(levels) + ']'.repeat(levels))).not.toThrow();
    expect(thrown(() => parseRefreshText('['.repeat(levels) + ']'.repeat(levels)))).toMatchObject({ code: 'bad_request' });
  });
});
