import { expect, test } from 'bun:test';
import { isAllInterfaces } from './all-interfaces.ts';

const ALL = [
  '0',
  '0.0.0.0',
  '0.0',
  '0.0.0',
  '000.000.000.000',
  '00.0.0.0',
  '0x0',
  '0x0.0.0.0',
  '::',
  '[::]',
  '::0',
  '0::',
  '0::0',
  '0:0:0:0:0:0:0:0',
  '0000:0000:0000:0000:0000:0000:0000:0000',
  '00000::',
  '::0.0.0.0',
  '::ffff:0.0.0.0',
  '::FFFF:0.0.0.0',
  '::ffff:0:0',
  '0:0:0:0:0:ffff:0:0',
  '[::ffff:0.0.0.0]',
  '::%eth0',
  ' 0.0.0.0 ',
  '',
];

const SPECIFIC = [
  '127.0.0.1',
  '127.0.0.2',
  '10.0.0.0',
  '0.0.0.1',
  '1',
  '::1',
  '[::1]',
  '::ffff:127.0.0.1',
  '::ffff:0:1',
  '::ffff:1:0',
  'fe80::',
  '::1:0:0',
  '::fffe:0:0',
  'localhost',
  '08.0.0.0',
  '::0::',
  '0:0:0:0:0:0:0:0:0',
];

test.each(ALL)('%p is every interface', (host) => {
  expect(isAllInterfaces(host)).toBe(true);
});

test.each(SPECIFIC)('%p is not every interface', (host) => {
  expect(isAllInterfaces(host)).toBe(false);
});
