import { describe, expect, test } from 'bun:test';
import { clusterIdFor, clusterIdToWire } from './endpoint.ts';

describe('clusterIdFor', () => {
  test('IPv4: u32 address × 65536 + port', () => {
    expect(clusterIdFor('127.0.0.2', 26000)).toBe(0x7f000002n * 65536n + 26000n);
    expect(clusterIdFor('0.0.0.0', 0)).toBe(0n);
    expect(clusterIdFor('255.255.255.255', 65535)).toBe((1n << 48n) - 1n);
  });
  test('IPv6: flagged hash, stable across spellings', () => {
    const a = clusterIdFor('::1', 26000);
    expect(a >= 1n << 63n).toBe(true);
    expect(clusterIdFor('0:0:0:0:0:0:0:1', 26000)).toBe(a);
    expect(clusterIdFor('::1', 26001)).not.toBe(a);
    expect(clusterIdFor('::ffff:127.0.0.1', 1)).toBe(clusterIdFor('::ffff:7f00:1', 1));
  });
  test('rejects non-addresses', () => {
    expect(() => clusterIdFor('host', 1)).toThrow(RangeError);
  });
});

describe('clusterIdToWire', () => {
  test('numbers while exact, strings beyond', () => {
    expect(clusterIdToWire(42n)).toBe(42);
    expect(clusterIdToWire(9007199254740991n)).toBe(9007199254740991);
    expect(clusterIdToWire(9007199254740992n)).toBe('9007199254740992');
  });
});
