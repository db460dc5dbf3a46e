import { describe, expect, test } from 'bun:test';
import { cachedLinkKeys, KEY_CACHE_LIMIT, linkKey } from './key.ts';

describe('linkKey', () => {
  test('one spelling per (endpoint, cluster id), the same every time it is asked', () => {
    expect(linkKey('0', 7n)).toBe('0\u00007');
    expect(linkKey('0', 7n)).toBe('0\u00007');
    expect(linkKey('1', 7n)).toBe('1\u00007');
    expect(linkKey('0', 18446744073709551615n)).toBe('0\u000018446744073709551615');
    expect(linkKey('0', 70n)).not.toBe(linkKey('07', 0n));
  });

  test('the kept keys stay bounded however many ids come and go, and keys stay right across a restart', () => {
    for (let i = 0; i < KEY_CACHE_LIMIT * 2 + 10; i++) {
      const id = 1_000_000n + BigInt(i);
      expect(linkKey('2', id)).toBe(`2\u0000${id}`);
      expect(cachedLinkKeys()).toBeLessThanOrEqual(KEY_CACHE_LIMIT);
    }
    expect(linkKey('0', 7n)).toBe('0\u00007');
  });
});
