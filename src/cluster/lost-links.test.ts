import { expect, test } from 'bun:test';
import type { Instance, RegistryDiff } from './instance.ts';
import { lostLinks } from './lost-links.ts';

const instance = (id: number, role: Instance['role'], peers: number[]) => ({ id, role, peers }) as unknown as Instance;
const diff = (updated: { before: Instance; after: Instance }[], removed: Instance[] = []): RegistryDiff => ({
  generation: 2,
  added: [],
  updated,
  removed,
});

test('a decode instance whose peers no longer list a prefill instance loses that link, and only that one', () => {
  const changed = diff([
    { before: instance(5, 'decode', [0, 1, 2]), after: instance(5, 'decode', [2, 3]) },
    { before: instance(6, 'decode', [0]), after: instance(6, 'decode', [0]) },
  ]);
  expect(lostLinks(changed)).toEqual([
    { p: 0, d: 5 },
    { p: 1, d: 5 },
  ]);
});

test('prefill peer lists and removed instances lose nothing here', () => {
  const changed = diff([{ before: instance(0, 'prefill', [5, 6]), after: instance(0, 'prefill', []) }], [instance(5, 'decode', [0])]);
  expect(lostLinks(changed)).toEqual([]);
});

test('peers kept in the same order, extended, or reordered lose nothing; a dropped one is lost whatever the order', () => {
  const changed = diff([
    { before: instance(5, 'decode', [0, 1]), after: instance(5, 'decode', [0, 1]) },
    { before: instance(6, 'decode', [0, 1]), after: instance(6, 'decode', [0, 1, 2]) },
    { before: instance(7, 'decode', [0, 1, 2]), after: instance(7, 'decode', [2, 0, 1]) },
    { before: instance(8, 'decode', [0, 1, 2]), after: instance(8, 'decode', [2, 0]) },
    { before: instance(9, 'decode', [0, 1]), after: instance(9, 'decode', [0]) },
  ]);
  expect(lostLinks(changed)).toEqual([
    { p: 1, d: 8 },
    { p: 1, d: 9 },
  ]);
});
