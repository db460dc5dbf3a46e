import { describe, expect, test } from 'bun:test';
import * as fc from 'fast-check';
import { lessLoaded, Pool, type PoolMember, SMALL_POOL_MAX } from './pool.ts';

interface Member extends PoolMember {
  load: number;
}

const sortedIds = (members: Iterable<Member>): number[] =>
  [...members].sort((a, b) => (lessLoaded(a, b) ? -1 : lessLoaded(b, a) ? 1 : 0)).map((m) => m.id);

describe('Pool', () => {
  test('an empty pool has no minimum and yields nothing', () => {
    const pool = new Pool<Member>();
    expect(pool.size).toBe(0);
    expect(pool.min()).toBeUndefined();
    expect(pool.at(0)).toBeUndefined();
    expect([...pool.ascending()]).toEqual([]);
  });

  test('orders by load, then by id', () => {
    const pool = new Pool<Member>();
    const members = [
      { id: 3, load: 0.5 },
      { id: 1, load: 0.5 },
      { id: 2, load: 0.1 },
      { id: 0, load: 0.9 },
    ];
    for (const m of members) pool.add(m);
    expect(pool.min()?.id).toBe(2);
    expect([...pool.ascending()].map((m) => m.id)).toEqual([2, 1, 3, 0]);
  });

  test('add and delete are idempotent', () => {
    const pool = new Pool<Member>();
    const m = { id: 7, load: 0 };
    pool.add(m);
    pool.add(m);
    expect(pool.size).toBe(1);
    pool.delete(m);
    pool.delete(m);
    expect(pool.size).toBe(0);
    expect(pool.has(m)).toBe(false);
  });

  test('reorder after a load change moves the member', () => {
    const pool = new Pool<Member>();
    const a = { id: 0, load: 0.1 };
    const b = { id: 1, load: 0.2 };
    pool.add(a);
    pool.add(b);
    a.load = 0.9;
    pool.reorder(a);
    expect(pool.min()).toBe(b);
    pool.reorder({ id: 5, load: 0 }); // not a member: ignored
    expect(pool.size).toBe(2);
  });

  test('matches a sorted reference under random adds, deletes and load changes, small pools and large', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), id: fc.nat(30), load: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }) }),
      fc.record({ kind: fc.constant('delete' as const), id: fc.nat(30) }),
      fc.record({
        kind: fc.constant('load' as const),
        id: fc.nat(30),
        load: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
      }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const pool = new Pool<Member>();
        const byId = new Map<number, Member>();
        // Dense positions as the pool keeps them: appended, and a hole filled by the last member.
        const positions: Member[] = [];
        for (const o of ops) {
          if (o.kind === 'add') {
            if (byId.has(o.id)) continue;
            const m = { id: o.id, load: o.load };
            byId.set(o.id, m);
            positions.push(m);
            pool.add(m);
          } else if (o.kind === 'delete') {
            const m = byId.get(o.id);
            if (m === undefined) continue;
            byId.delete(o.id);
            const last = positions.pop()!;
            if (last !== m) positions[positions.indexOf(m)] = last;
            pool.delete(m);
          } else {
            const m = byId.get(o.id);
            if (m === undefined) continue;
            m.load = o.load;
            pool.reorder(m);
          }
        }
        const expected = sortedIds(byId.values());
        expect([...pool.ascending()].map((m) => m.id)).toEqual(expected);
        expect(pool.min()?.id).toBe(expected[0] as number);
        expect(pool.size).toBe(byId.size);
        expect(Array.from({ length: pool.size + 1 }, (_, i) => pool.at(i)?.id)).toEqual([...positions.map((m) => m.id), undefined]);
        for (const m of byId.values()) expect(pool.has(m)).toBe(true);
        expect(sortedIds(pool.members())).toEqual(expected);
      }),
    );
  });

  test('a pool growing past the small size keeps its positions and its order, and stays right as it shrinks back', () => {
    const pool = new Pool<Member>();
    const members = Array.from({ length: SMALL_POOL_MAX + 1 }, (_, id) => ({ id, load: ((id * 5) % 7) / 7 }));
    for (const m of members.slice(0, SMALL_POOL_MAX)) pool.add(m);
    const before = Array.from({ length: SMALL_POOL_MAX }, (_, i) => pool.at(i));
    pool.add(members[SMALL_POOL_MAX]!);
    pool.add(members[0]!); // already there: no-op in either shape
    expect(pool.size).toBe(SMALL_POOL_MAX + 1);
    expect(Array.from({ length: SMALL_POOL_MAX }, (_, i) => pool.at(i))).toEqual(before);
    expect(pool.at(SMALL_POOL_MAX)).toBe(members[SMALL_POOL_MAX]!);
    expect([...pool.ascending()].map((m) => m.id)).toEqual(sortedIds(members));
    // A load change now needs reorder(): the large shape keeps a heap.
    members[3]!.load = -1;
    pool.reorder(members[3]!);
    expect(pool.min()).toBe(members[3]!);
    for (const m of members.slice(0, 10)) pool.delete(m);
    expect(pool.size).toBe(SMALL_POOL_MAX + 1 - 10);
    expect([...pool.ascending()].map((m) => m.id)).toEqual(sortedIds(members.slice(10)));
    expect(pool.has(members[3]!)).toBe(false);
  });

  test('a small pool reads loads as they are: a change needs no reorder, and a partial walk stops after one scan', () => {
    const pool = new Pool<Member>();
    const members = [0.4, 0.2, 0.6].map((load, id) => ({ id, load }));
    for (const m of members) pool.add(m);
    members[2]!.load = 0.1;
    expect(pool.min()).toBe(members[2]!);
    const walk = pool.ascending();
    expect(walk.next().value).toBe(members[2]!);
    expect([...walk].map((m) => m.id)).toEqual([1, 0]);
  });

  test('a partial walk of a large pool yields its smallest members in order', () => {
    const pool = new Pool<Member>();
    const all: Member[] = [];
    for (let i = 0; i < 10_000; i++) {
      const m = { id: i, load: ((i * 7919) % 10_000) / 10_000 };
      all.push(m);
      pool.add(m);
    }
    const first: number[] = [];
    for (const m of pool.ascending()) {
      first.push(m.id);
      if (first.length === 5) break;
    }
    expect(first).toEqual(sortedIds(all).slice(0, 5));
  });
});

test('markUnordered lists a pool once per batch; reorderAll ends the batch', () => {
  const pool = new Pool<{ id: number; load: number }>();
  const nodes = [0.5, 0.1, 0.9].map((load, id) => ({ id, load }));
  for (const node of nodes) pool.add(node);
  expect(pool.markUnordered()).toBe(true);
  expect(pool.markUnordered()).toBe(false);
  nodes[2]!.load = 0;
  nodes[1]!.load = 0.8;
  pool.reorderAll();
  expect([...pool.ascending()].map((n) => n.id)).toEqual([2, 0, 1]);
  expect(pool.markUnordered()).toBe(true);
});

test('a pool marked unordered restores its order when next read, and stays right through changes meanwhile', () => {
  const pool = new Pool<{ id: number; load: number }>();
  const nodes = [0.5, 0.1, 0.9, 0.3].map((load, id) => ({ id, load }));
  for (const node of nodes) pool.add(node);
  pool.markUnordered();
  nodes[2]!.load = 0;
  nodes[1]!.load = 0.8;
  const late = { id: 4, load: 0.2 };
  pool.add(late);
  pool.delete(nodes[3]!);
  nodes[0]!.load = 0.05;
  pool.reorder(nodes[0]!);
  expect(pool.min()?.id).toBe(2);
  expect([...pool.ascending()].map((n) => n.id)).toEqual([2, 0, 4, 1]);
  expect(pool.markUnordered()).toBe(true);
  nodes[1]!.load = 0;
  expect([...pool.ascending()].map((n) => n.id)).toEqual([1, 2, 0, 4]);
});
