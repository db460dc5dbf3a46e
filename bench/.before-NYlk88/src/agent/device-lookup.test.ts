import { expect, test } from 'bun:test';
import { endpointAt } from './device-lookup.ts';

const devices = [
  { endpoint: '0', ip: '127.0.0.2', port: 26000 },
  { endpoint: '1', ip: '127.0.0.2', port: 26001 },
  { endpoint: '2', ip: '127.0.0.3', port: 26002 },
];

test('devices sharing an address are told apart by port', () => {
  expect(endpointAt(devices, { ip: '127.0.0.2', port: 26000 })).toBe('0');
  expect(endpointAt(devices, { ip: '127.0.0.2', port: 26001 })).toBe('1');
  expect(endpointAt(devices, { ip: '127.0.0.3', port: 26002 })).toBe('2');
});

test("no port, or a port that is no device's, picks the first device on the address; an unknown address none", () => {
  expect(endpointAt(devices, { ip: '127.0.0.2', port: 0 })).toBe('0');
  expect(endpointAt(devices, { ip: '127.0.0.2', port: 26002 })).toBe('0');
  expect(endpointAt(devices, { ip: '127.0.0.9', port: 0 })).toBeUndefined();
  expect(endpointAt(devices, undefined)).toBeUndefined();
});
