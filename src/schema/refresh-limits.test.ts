import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { isIP } from 'node:net';
import { isIpString, isPortString } from './refresh-limits.ts';

/** The rule the port check implements, written the obvious way. */
const portRule = (x: string) => /^[1-9][0-9]{3,4}$/.test(x) && Number(x) >= 1024 && Number(x) <= 65535;

/** Text made of the characters addresses and near-misses are made of. */
const addressLike = fc.stringMatching(/^[0-9.:a-fA-F ]{0,20}$/);
const quadLike = fc
  .array(
    fc.oneof(
      fc.nat(300).map(String),
      fc.nat(99).map((n) => `0${n}`),
      fc.constant(''),
    ),
    { minLength: 2, maxLength: 6 },
  )
  .map((parts) => parts.join('.'));

describe('isIpString', () => {
  test('agrees with isIP on dotted quads, IPv6 text and near misses', () => {
    fc.assert(
      fc.property(fc.oneof(addressLike, quadLike), (text) => {
        expect(isIpString(text)).toBe(isIP(text) !== 0);
      }),
      { numRuns: 20_000 },
    );
    for (const text of [
      '0.0.0.0',
      '255.255.255.255',
      '256.0.0.1',
      '01.2.3.4',
      '1.2.3',
      '1.2.3.4.',
      '::',
      '::1',
      '1::2.3.4.5',
      '::ffff:1.2.3.4',
      '6099::75:7a3',
    ])
      expect(isIpString(text)).toBe(isIP(text) !== 0);
  });

  test('refuses what is not a string', () => {
    for (const value of [1, null, undefined, ['1.2.3.4']]) expect(isIpString(value)).toBe(false);
  });
});

describe('isPortString', () => {
  test('agrees with the rule: a canonical decimal in [1024, 65535]', () => {
    fc.assert(
      fc.property(fc.oneof(fc.nat(70_000).map(String), fc.stringMatching(/^[0-9 +.e-]{0,7}$/)), (text) => {
        expect(isPortString(text)).toBe(portRule(text));
      }),
      { numRuns: 20_000 },
    );
    for (const text of ['1023', '1024', '65535', '65536', '01025', ' 1025', '1025 ', '+1025', '1e4', '٠١٠٢٥'])
      expect(isPortString(text)).toBe(portRule(text));
    expect(isPortString(1025)).toBe(false);
  });
});
