import { expect, test } from 'bun:test';
import fc from 'fast-check';
import { DeadlineHeap, IndexedHeap, type HeapItem } from './heap.ts';

interface Item extends HeapItem {
  readonly name: number;
}

type HeapOp = { kind: 'push' | 'remove' | 'update'; name: number; deadline: number };

test('peek always returns an item with the earliest deadline, under any mix of push, remove and update', () => {
  const opArb = fc.record({
    kind: fc.constantFrom<HeapOp['kind']>('push', 'remove', 'update'),
    name: fc.nat(15),
    deadline: fc.integer({ min: -1_000, max: 1_000 }),
  });
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 200 }), (ops) => {
      const heap = new DeadlineHeap<Item>();
      const items = new Map<number, Item>();
      const inHeap = new Set<number>();
      for (const op of ops) {
        let item = items.get(op.name);
        if (item === undefined) {
          item = { name: op.name, deadline: 0, heapIndex: -1 };
          items.set(op.name, item);
        }
        if (op.kind === 'remove') {
          heap.remove(item);
          inHeap.delete(op.name);
        } else if (op.kind === 'update' || inHeap.has(op.name)) {
          heap.update(item, op.deadline);
          inHeap.add(op.name);
        } else {
          item.deadline = op.deadline;
          heap.push(item);
          inHeap.add(op.name);
        }
        expect(heap.size).toBe(inHeap.size);
        const min = Math.min(...[...inHeap].map((n) => (items.get(n) as Item).deadline));
        expect(heap.peek()?.deadline ?? Infinity).toBe(min);
        for (const [name, it] of items) expect(it.heapIndex >= 0).toBe(inHeap.has(name));
      }
      // Draining yields every item in deadline order.
      const drained: number[] = [];
      for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
        drained.push(top.deadline);
        heap.remove(top);
      }
      expect(drained).toEqual([...drained].sort((a, b) => a - b));
      expect(drained).toHaveLength(inHeap.size);
    }),
    { numRuns: 300 },
  );
});

test('removing an item that is not in the heap is a no-op', () => {
  const heap = new DeadlineHeap<Item>();
  const a: Item = { name: 1, deadline: 5, heapIndex: -1 };
  const b: Item = { name: 2, deadline: 3, heapIndex: -1 };
  heap.push(a);
  heap.remove(b);
  heap.remove(a);
  heap.remove(a);
  expect(heap.size).toBe(0);
  expect(heap.peek()).toBeUndefined();
});

interface Loaded {
  id: number;
  load: number;
  heapIndex: number;
}

test('an IndexedHeap orders by its comparator, and reorder restores the order after a key changed', () => {
  const heap = new IndexedHeap<Loaded>((a, b) => a.load < b.load || (a.load === b.load && a.id < b.id));
  const nodes = [0.5, 0.1, 0.9, 0.1].map((load, id) => ({ id, load, heapIndex: -1 }));
  for (const node of nodes) heap.push(node);
  expect(heap.peek()?.id).toBe(1); // 0.1 twice: the lower id first
  nodes[2]!.load = 0;
  heap.reorder(nodes[2]!);
  expect(heap.peek()?.id).toBe(2);
  nodes[2]!.load = 1;
  heap.reorder(nodes[2]!);
  expect(heap.peek()?.id).toBe(1);
  // Every position holds an item that knows it, and no child comes before its parent.
  for (let i = 0; i < heap.size; i++) {
    expect(heap.items[i]?.heapIndex).toBe(i);
    if (i > 0) expect(heap.items[(i - 1) >> 1]!.load <= heap.items[i]!.load).toBe(true);
  }
  expect(heap.items).toHaveLength(heap.size);
});

test('has and reorder tell apart an item that is not in the heap, even one with a stale position', () => {
  const heap = new IndexedHeap<Loaded>((a, b) => a.load < b.load);
  const a = { id: 1, load: 1, heapIndex: -1 };
  const stranger = { id: 2, load: 0, heapIndex: 0 };
  heap.push(a);
  expect(heap.has(a)).toBe(true);
  expect(heap.has(stranger)).toBe(false);
  heap.reorder(stranger);
  expect(heap.size).toBe(1);
  expect(heap.peek()).toBe(a);
  heap.remove(a);
  expect(heap.has(a)).toBe(false);
  expect(a.heapIndex).toBe(-1);
});
