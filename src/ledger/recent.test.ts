import { expect, test } from 'bun:test';
import { RecentRecords } from './recent.ts';
import type { TransferRecord } from './records.ts';

function record(requestId: string, state: TransferRecord['state'] = 'done'): TransferRecord {
  return {
    requestId,
    clientRequestId: null,
    p: 0,
    d: 1,
    slots: 1,
    pBlocks: 1,
    dBlocks: 1,
    decodeHeld: true,
    state,
    code: null,
    detail: null,
    bytes: 0,
    blocksMoved: 0,
    leaseMs: 1,
    deadline: 1,
    reservedAt: 0,
    prefillingAt: null,
    transferringAt: null,
    endedAt: 1,
  };
}

test('keeps the newest records up to capacity, newest first, and forgets evicted ids', () => {
  const recent = new RecentRecords(3);
  for (const id of ['a', 'b', 'c', 'd']) recent.push(record(id));
  expect(recent.list().map((r) => r.requestId)).toEqual(['d', 'c', 'b']);
  expect(recent.size).toBe(3);
  expect(recent.get('a')).toBeUndefined();
  expect(recent.get('b')?.requestId).toBe('b');
});

test('a reused id maps to its latest record, and evicting the older one keeps the index', () => {
  const recent = new RecentRecords(2);
  recent.push(record('x', 'failed'));
  recent.push(record('x', 'done'));
  expect(recent.get('x')?.state).toBe('done');
  recent.push(record('y'));
  // The evicted entry was the older 'x'; the newer one is still held and still indexed.
  expect(recent.get('x')?.state).toBe('done');
  recent.push(record('z'));
  expect(recent.get('x')).toBeUndefined();
});

test('capacity 0 keeps nothing', () => {
  const recent = new RecentRecords(0);
  recent.push(record('a'));
  expect(recent.list()).toEqual([]);
  expect(recent.get('a')).toBeUndefined();
});
