import { expect, test } from 'bun:test';
import { SharedScratch } from './scratch.ts';

test('buffers are shared memory of the asked length and are lent again once returned', () => {
  const scratch = new SharedScratch();
  const a = scratch.take(3 * 4096);
  expect(a.byteLength).toBe(3 * 4096);
  expect(a.buffer).toBeInstanceOf(SharedArrayBuffer);
  expect(a.buffer.byteLength).toBe(16384);
  const b = scratch.take(3 * 4096);
  expect(b.buffer).not.toBe(a.buffer);
  scratch.release(a);
  expect(scratch.take(4 * 4096).buffer).toBe(a.buffer);
  expect(scratch.take(10).byteLength).toBe(10);
  // Foreign buffers are not kept.
  scratch.release(new Uint8Array(100));
  expect(scratch.take(100).buffer).toBeInstanceOf(SharedArrayBuffer);
});
