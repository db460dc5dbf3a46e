import { describe, expect, test } from 'bun:test';
import { ipKey, urlKey } from './address-key.ts';

describe('ipKey', () => {
  test('every spelling of one IPv6 address has one key', () => {
    for (const spelling of ['::1', '0:0:0:0:0:0:0:1', '0::1', '0000:0000::0001', '[::1]']) expect(ipKey(spelling)).toBe('::1');
    expect(ipKey('2001:DB8:0:0::1')).toBe('2001:db8::1');
  });

  test('an IPv4-mapped IPv6 address is the IPv4 address it maps, in both spellings', () => {
    expect(ipKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(ipKey('::FFFF:a00:1')).toBe('10.0.0.1');
    expect(ipKey('10.0.0.1')).toBe('10.0.0.1');
  });

  test('distinct addresses keep distinct keys; what is not an address stays as written', () => {
    expect(ipKey('::2')).not.toBe(ipKey('::1'));
    expect(ipKey('::ffff:10.0.0.1')).not.toBe(ipKey('10.0.0.2'));
    expect(ipKey('fe80::1%eth0')).toBe('fe80::1%eth0');
  });
});

describe('urlKey', () => {
  test('case, default port, trailing slash and IPv6 spelling do not make two URLs', () => {
    expect(urlKey('HTTP://[0:0:0:0:0:0:0:1]/')).toBe('http://[::1]:80');
    expect(urlKey('http://[::1]:80')).toBe('http://[::1]:80');
    expect(urlKey('https://Node-1.example:443/v1/')).toBe('https://node-1.example:443/v1');
    expect(urlKey('http://[::ffff:10.0.0.1]:8000')).toBe('http://10.0.0.1:8000');
  });

  test('another port, scheme or path is another URL; a non-URL stays as written', () => {
    expect(urlKey('http://10.0.0.1:8000')).not.toBe(urlKey('http://10.0.0.1:8001'));
    expect(urlKey('http://10.0.0.1')).not.toBe(urlKey('https://10.0.0.1'));
    expect(urlKey('http://10.0.0.1/a')).not.toBe(urlKey('http://10.0.0.1/b'));
    expect(urlKey('nope')).toBe('nope');
  });
});
