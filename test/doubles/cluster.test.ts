import { expect, test } from 'bun:test';
import type { RegistryDiff } from '../../src/cluster/instance.ts';
import { TestCluster, testInstance } from './cluster.ts';

const ids = (diff: RegistryDiff) => ({
  added: diff.added.map((i) => i.id),
  updated: diff.updated.map((u) => u.after.id),
  removed: diff.removed.map((i) => i.id),
});

test('an instance is all free unless told otherwise, with totals at least as large as the free room', () => {
  expect(testInstance({ id: 0 })).toMatchObject({ role: 'prefill', label: 2, groupId: 0, totalSlots: 100, availSlots: 100 });
  expect(testInstance({ id: 1, role: 'decode', availSlots: 4, availBlocks: 5000 })).toMatchObject({
    label: 3,
    totalSlots: 100,
    availSlots: 4,
    totalBlocks: 5000,
    availBlocks: 5000,
  });
  expect(testInstance({ id: 2, totalBlocks: 6, peers: [1], blockSize: 16 })).toMatchObject({ availBlocks: 6, peers: [1], blockSize: 16 });
});

test('refreshes emit diffs like the registry: role changes as removal plus addition, unchanged instances left out', () => {
  const cluster = new TestCluster([{ id: 0 }, { id: 1, role: 'decode', peers: [0] }]);
  expect([cluster.generation, cluster.byRole('decode').map((i) => i.id)]).toEqual([0, [1]]);
  const diffs: RegistryDiff[] = [];
  const unsubscribe = cluster.onChange((diff) => diffs.push(diff));
  expect(cluster.listenerCount).toBe(1);

  const kept = cluster.get(1);
  cluster.refresh([
    { id: 0, role: 'decode' },
    { id: 1, role: 'decode', peers: [0] },
    { id: 2, availSlots: 3 },
  ]);
  expect(ids(diffs[0]!)).toEqual({ added: [0, 2], updated: [], removed: [0] });
  expect(cluster.get(1)).toBe(kept!);

  cluster.patch({ id: 2, availSlots: 1 });
  expect(ids(diffs[1]!)).toEqual({ added: [], updated: [2], removed: [] });
  expect(cluster.get(0)?.role).toBe('decode');
  cluster.remove(0);
  expect(ids(diffs[2]!)).toEqual({ added: [], updated: [], removed: [0] });
  expect([cluster.generation, diffs.map((d) => d.generation)]).toEqual([3, [1, 2, 3]]);

  unsubscribe();
  cluster.refresh([]);
  expect([cluster.listenerCount, diffs.length, cluster.all()]).toEqual([0, 3, []]);
});
