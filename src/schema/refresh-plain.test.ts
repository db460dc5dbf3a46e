import { describe, expect, test } from 'bun:test';
import { isMeasuredJson, parseJsonExact, UnsafeInteger } from '../core/exact-json.ts';
import { MAX_JSON_DEPTH } from '../core/limits.ts';
import { parsesIn } from '../../test/doubles/json-parse-count.ts';
import { exampleSnapshot, SEED_REFRESH_BODY, seedExample } from '../../test/doubles/refresh-examples.ts';
import { isPlainSnapshot, parseRefreshText } from './refresh-plain.ts';
import { validateRefresh } from './refresh.ts';

/** The seed with `extra` set at one of the places a snapshot may carry keys of its own. */
const PLACES: readonly [string, number, (b: ReturnType<typeof seedExample>) => Record<string, unknown>][] = [
  // [where, levels above a value put there, the object]
  ['the snapshot', 1, (b) => b as never],
  ['an instance', 3, (b) => b.instances[0]!],
  ['static_info', 4, (b) => b.instances[0]!.static_info],
  ['dynamic_info', 4, (b) => b.instances[1]!.dynamic_info],
];

const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

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
      // Plain stands for measured (the registry asks isPlainSnapshot first): one weak mark, not two.
      expect(isMeasuredJson(value)).toBe(false);
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

  test('a valid snapshot with other keys holding plain values is parsed once, not the exact way again', async () => {
    for (const [, , place] of PLACES) {
      const body = seedExample();
      place(body).bootstrap_port = 8998;
      place(body).note = { tags: ['a', 1.5, -3, null, true], big: 9007199254740991 };
      const text = JSON.stringify(body);
      let value: unknown;
      expect(await parsesIn(() => (value = parseRefreshText(text)))).toBe(1);
      expect(value).toEqual(parseJsonExact(text) as never);
      expect(isPlainSnapshot(value)).toBe(false);
      expect(isMeasuredJson(value)).toBe(true);
      expect(validateRefresh(value).ok).toBe(true);
    }
  });

  test('other keys nested up to the depth limit are kept; one level more gets the exact parse and its error', () => {
    for (const [where, above, place] of PLACES) {
      const body = seedExample();
      place(body).extra = 0;
      const at = (levels: number) => JSON.stringify(body).replace('"extra":0', `"extra":${nested(levels)}`);
      const fits = at(MAX_JSON_DEPTH - above);
      expect({ where, value: parseRefreshText(fits) }).toEqual({ where, value: parseJsonExact(fits) as never });
      const deep = at(MAX_JSON_DEPTH - above + 1);
      const expected = thrown(() => parseJsonExact(deep));
      expect(expected).toMatchObject({ code: 'bad_request' });
      expect({ where, error: thrown(() => parseRefreshText(deep)) }).toEqual({ where, error: expected });
    }
  });

  test('a number beyond 2^53-1 among other keys, even written as a float, gets the exact parse', async () => {
    const body = seedExample() as unknown as Record<string, unknown>;
    body.extra = 0;
    const huge = JSON.stringify(body).replace('"extra":0', '"extra":[1e300]');
    expect(await parsesIn(() => parseRefreshText(huge))).toBe(2);
    expect(parseRefreshText(huge)).toEqual(parseJsonExact(huge) as never);
  });

  test('an invalid snapshot is parsed once unless its text holds a long integer', async () => {
    const body = seedExample();
    body.instances[0]!.static_info.role = 1;
    const text = JSON.stringify(body);
    expect(await parsesIn(() => parseRefreshText(text))).toBe(1);
    expect(isMeasuredJson(parseRefreshText(text))).toBe(true);
    const long = text.replace('"role":1', '"role":18446744073709551615');
    expect(await parsesIn(() => parseRefreshText(long))).toBe(2);
    const exact = parseRefreshText(long) as ReturnType<typeof seedExample>;
    expect(exact.instances[0]!.static_info.role).toBeInstanceOf(UnsafeInteger);
    expect(validateRefresh(exact)).toMatchObject({ ok: false });
  });

  test('known keys in another order are parsed once, not plain (the registry keeps such objects as they came)', () => {
    const body = seedExample();
    const { id, ...rest } = body.instances[0]!;
    body.instances[0] = { ...rest, id } as never;
    const text = JSON.stringify(body);
    const value = parseRefreshText(text);
    expect(value).toEqual(JSON.parse(text));
    expect(isPlainSnapshot(value)).toBe(false);
    expect(isMeasuredJson(value)).toBe(true);
    expect(validateRefresh(value)).toEqual({ ok: true, snapshot: value as never });
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
