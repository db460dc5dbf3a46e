import { expect, test } from 'bun:test';
import { KV_BLOCKS_HEADER, KV_BYTES_HEADER, kvMovedOf } from './kv-report.ts';

test('reads the bytes and blocks D reported', () => {
  const headers = new Headers({ [KV_BYTES_HEADER]: '65536', [KV_BLOCKS_HEADER]: '4' });
  expect(kvMovedOf(headers)).toEqual({ bytes: 65536, blocks: 4 });
});

test('leaves out what D did not report', () => {
  expect(kvMovedOf(new Headers())).toEqual({});
  expect(kvMovedOf(new Headers({ [KV_BLOCKS_HEADER]: '0' }))).toEqual({ blocks: 0 });
});

test('ignores malformed values instead of failing the request', () => {
  for (const junk of ['-1', '1.5', 'abc', '', '1e3', '99999999999999999', '0x10']) {
    expect(kvMovedOf(new Headers({ [KV_BYTES_HEADER]: junk, [KV_BLOCKS_HEADER]: junk }))).toEqual({});
  }
});
