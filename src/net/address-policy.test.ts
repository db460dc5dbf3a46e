import { describe, expect, test } from 'bun:test';
import { hostOf, InstanceAddressPolicy, parseCidr } from './address-policy.ts';

describe('InstanceAddressPolicy', () => {
  test('without a list: loopback, the seed example 0.0.0.0 and private addresses pass; link-local and multicast never do', () => {
    const policy = new InstanceAddressPolicy(undefined);
    for (const ip of ['127.0.0.1', '127.0.0.9', '::1', '0.0.0.0', '10.1.2.3', '192.168.0.4']) expect(policy.refusal(ip)).toBeUndefined();
    for (const ip of [
      '169.254.169.254',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      'fe80::1',
      '224.0.0.1',
      'ff02::1',
      '255.255.255.255',
    ]) {
      expect(policy.refusal(ip)).toContain('never instances');
    }
  });

  test('with a list, only addresses inside it pass, and the defaults still refuse', () => {
    const policy = new InstanceAddressPolicy(['10.0.0.0/8', 'fd00::/8', '169.254.0.0/16']);
    expect(policy.refusal('10.9.9.9')).toBeUndefined();
    expect(policy.refusal('fd12::3')).toBeUndefined();
    expect(policy.refusal('11.0.0.1')).toBe('outside pdlink.allowed_instance_networks');
    expect(policy.refusal('127.0.0.1')).toBe('outside pdlink.allowed_instance_networks');
    expect(policy.refusal('169.254.169.254')).toContain('never instances');
  });

  test('its own listeners are refused, loopback and unspecified counting as this host, other ports pass', () => {
    const policy = new InstanceAddressPolicy(undefined, [{ ip: '127.0.0.1', port: 1025 }]);
    policy.addOwn([{ ip: '127.0.0.1', port: 40000 }]);
    expect(policy.refusal('127.0.0.1', 1025)).toContain('own listeners');
    expect(policy.refusal('0.0.0.0', 40000)).toContain('own listeners');
    expect(policy.refusal('::ffff:127.0.0.1', 40000)).toContain('own listeners');
    // The same IPv4-mapped address however IPv6 spells it.
    for (const ip of ['::ffff:7f00:1', '::FFFF:7F00:0001', '0:0:0:0:0:ffff:7f00:1', '0:0:0:0:0:ffff:127.0.0.1']) {
      expect(policy.refusal(ip, 1025)).toContain('own listeners');
    }
    expect(policy.refusal('::ffff:7f00:2', 1025)).toBeUndefined();
    expect(policy.refusal('127.0.0.1', 1027)).toBeUndefined();
    expect(policy.refusal('10.0.0.1', 1025)).toBeUndefined();
  });

  test('hostOf: one spelling per host, IPv4-mapped IPv6 as its IPv4', () => {
    expect(hostOf('::FFFF:7F00:1')).toBe('127.0.0.1');
    expect(hostOf('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(hostOf('0:0:0:0:0:0:0:1')).toBe('::1');
    expect(hostOf('FE80:0::1')).toBe('fe80::1');
    expect(hostOf('10.0.0.1')).toBe('10.0.0.1');
    expect(hostOf('not an address')).toBe('not an address');
    const policy = new InstanceAddressPolicy(undefined, [{ ip: '::1', port: 1025 }]);
    expect(policy.refusal('0:0:0:0:0:0:0:1', 1025)).toContain('own listeners');
  });

  test('parseCidr names what is wrong', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    expect(parseCidr('::1')).toEqual({ address: '::1', prefix: 128, family: 'ipv6' });
    expect(() => parseCidr('10.0.0.0/33')).toThrow('prefix must be 0 to 32');
    expect(() => parseCidr('example.com/8')).toThrow('is not an IPv4 or IPv6 network');
    expect(() => parseCidr('10.0.0.0/')).toThrow('prefix');
  });
});

describe('verdicts asked again', () => {
  test('an address asked about before gets the same answer, and listeners added later still count', () => {
    const policy = new InstanceAddressPolicy(['10.0.0.0/8']);
    for (let round = 0; round < 3; round++) {
      expect(policy.refusal('10.0.0.5', 1025)).toBeUndefined();
      expect(policy.refusal('11.0.0.5', 1025)).toBe('outside pdlink.allowed_instance_networks');
      expect(policy.refusal('169.254.169.254')).toBe('link-local, multicast and broadcast addresses are never instances');
      expect(policy.refusal('not an address', 1025)).toBeUndefined();
    }
    const before = policy.generation;
    policy.addOwn([]);
    expect(policy.generation).toBe(before);
    policy.addOwn([{ ip: '10.0.0.5', port: 1025 }]);
    expect(policy.generation).not.toBe(before);
    expect(policy.refusal('10.0.0.5', 1025)).toBe("is one of this process's own listeners");
    expect(policy.refusal('10.0.0.5', 1026)).toBeUndefined();
    // The port as the wire carries it, as text, is compared by value.
    expect(policy.refusal('10.0.0.5', '1025')).toBe("is one of this process's own listeners");
    expect(policy.refusal('10.0.0.5', '1026')).toBeUndefined();
  });

  test('answers stay right past the number of addresses it keeps', () => {
    const policy = new InstanceAddressPolicy(['10.0.0.0/8']);
    for (let i = 0; i < 70_000; i++) {
      const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      expect(policy.refusal(ip)).toBeUndefined();
    }
    expect(policy.refusal('11.0.0.1')).toBe('outside pdlink.allowed_instance_networks');
    expect(policy.refusal('10.0.0.1')).toBeUndefined();
  });
});
