import { describe, expect, test } from 'bun:test';
import { LARGE_TEXT_CHARS } from '../core/turns.ts';
import { readJsonRequest } from './json-request.ts';

const post = (body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  new Request('http://127.0.0.1/x', { method: 'POST', headers, body });

describe('readJsonRequest', () => {
  test('every refusal is a rejected promise, never a throw at the call', async () => {
    let wrongType: Promise<unknown> | undefined;
    let tooLarge: Promise<unknown> | undefined;
    expect(() => {
      wrongType = readJsonRequest(post('{}', { 'content-type': 'text/plain' }), { limitBytes: 100 });
      tooLarge = readJsonRequest(post('{"a":1}', { 'content-type': 'application/json', 'content-length': '1000' }), { limitBytes: 100 });
    }).not.toThrow();
    await expect(wrongType!).rejects.toMatchObject({ code: 'unsupported_media_type' });
    await expect(tooLarge!).rejects.toMatchObject({ code: 'payload_too_large' });
  });

  test('a parse of its own gets the checked text; its error is the rejection', async () => {
    expect(await readJsonRequest(post('{"a":1}'), { limitBytes: 100, parse: (t) => t.length })).toBe(7);
    const refused = readJsonRequest(post('{"a":1}'), {
      limitBytes: 100,
      parse: () => {
        throw new RangeError('no');
      },
    });
    await expect(refused).rejects.toBeInstanceOf(RangeError);
  });

  test('a large body is parsed in a turn of its own: what waited for the loop runs before and after the parse', async () => {
    const text = JSON.stringify({ prompt: 'y'.repeat(LARGE_TEXT_CHARS) });
    const order: string[] = [];
    const read = readJsonRequest(post(text), {
      limitBytes: 4 * LARGE_TEXT_CHARS,
      parse: (t) => {
        order.push('parse');
        // Queued during the parse: it runs before the value is handed on.
        setImmediate(() => order.push('after the parse'));
        return JSON.parse(t) as unknown;
      },
    });
    setImmediate(() => order.push('before the parse'));
    const value = (await read) as { prompt: string };
    order.push('value');
    expect(value.prompt.length).toBe(LARGE_TEXT_CHARS);
    expect(order).toEqual(['before the parse', 'parse', 'after the parse', 'value']);
    // A small body is parsed at once, in the turn its text arrived.
    expect(await readJsonRequest(post('{"a":1}'), { limitBytes: 100 })).toEqual({ a: 1 });
  });
});
