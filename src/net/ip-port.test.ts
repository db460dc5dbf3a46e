import { describe, expect, test } from 'bun:test';
import { formatIpPort, parseIpPort } from './ip-port.ts';

describe('parseIpPort', () => {
  test('accepts IPv4 and bracketed IPv6', () => {
    expect(parseIpPort('127.0.0.2:26000')).toEqual({ ip: '127.0.0.2', port: 26000 });
    expect(parseIpPort('[::1]:1')).toEqual({ ip: '::1', port: 1 });
    expect(parseIpPort('[fe80::1:2]:65535')).toEqual({ ip: 'fe80::1:2', port: 65535 });
  });
  test('rejects malformed text and ports out of range', () => {
    for (const bad of [
      '',
      '127.0.0.1',
      '127.0.0.1:',
      ':80',
      '::1:80',
      '[127.0.0.1]:80',
      '[::1]',
      '256.0.0.1:80',
      '127.0.0.1:65536',
      '127.0.0.1:0',
      'host:80',
      '127.0.0.1:80 ',
      '127.0.0.1:-1',
      '127.0.0.1:123456',
    ]) {
      expect(parseIpPort(bad)).toBeUndefined();
    }
  });
  test('port 0 only when asked for', () => {
    expect(parseIpPort('127.0.0.1:0', true)).toEqual({ ip: '127.0.0.1', port: 0 });
  });
  test('round-trips through formatIpPort', () => {
    for (const text of ['10.1.2.3:26000', '[::1]:26001']) expect(formatIpPort(parseIpPort(text)!)).toBe(text);
  });
});
