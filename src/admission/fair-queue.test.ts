import { describe, expect, test } from 'bun:test';
import { FairQueue, type FairItem } from './fair-queue.ts';

interface Item extends FairItem {
  readonly tenant: string;
  readonly n: number;
}

const item = (tenant: string, n: number): Item => ({ tenant, n, waiting: false });

function drain(queue: FairQueue<Item>, count = Infinity): Item[] {
  const out: Item[] = [];
  for (let i = 0; i < count; i++) {
    const next = queue.pop();
    if (next === undefined) break;
    out.push(next);
  }
  return out;
}

describe('FairQueue', () => {
  test('one tenant: first in, first out', () => {
    const q = new FairQueue<Item>();
    for (let n = 0; n < 5; n++) q.push('a', 1, item('a', n));
    expect(q.size).toBe(5);
    expect(drain(q).map((i) => i.n)).toEqual([0, 1, 2, 3, 4]);
    expect(q.size).toBe(0);
    expect(q.pop()).toBeUndefined();
  });

  test('two tenants offering 10:1 with equal weights are served alike while both wait', () => {
    const q = new FairQueue<Item>();
    // The flood arrives first and keeps arriving ten to one; the trickle is not starved.
    for (let round = 0; round < 20; round++) {
      for (let k = 0; k < 10; k++) q.push('flood', 1, item('flood', round * 10 + k));
      q.push('trickle', 1, item('trickle', round));
    }
    const served = drain(q, 40);
    const trickle = served.filter((i) => i.tenant === 'trickle').length;
    expect(trickle).toBe(20);
    expect(served.length - trickle).toBe(20);
    // Within each tenant the order of arrival holds.
    expect(served.filter((i) => i.tenant === 'trickle').map((i) => i.n)).toEqual([...Array(20).keys()]);
  });

  test('weights 3:1 give three to one while both wait', () => {
    const q = new FairQueue<Item>();
    for (let n = 0; n < 100; n++) {
      q.push('gold', 3, item('gold', n));
      q.push('bronze', 1, item('bronze', n));
    }
    const served = drain(q, 80);
    expect(served.filter((i) => i.tenant === 'gold').length).toBe(60);
  });

  test('a tenant that was idle earns no credit: it joins at the current virtual time', () => {
    const q = new FairQueue<Item>();
    for (let n = 0; n < 50; n++) q.push('busy', 1, item('busy', n));
    drain(q, 40);
    for (let n = 0; n < 10; n++) q.push('late', 1, item('late', n));
    const next = drain(q, 10).map((i) => i.tenant);
    // Alternation, not ten of `late` in a row.
    expect(next.filter((t) => t === 'late').length).toBe(5);
  });

  test('remove takes an item out wherever it is; counts and order hold', () => {
    const q = new FairQueue<Item>();
    const items = [0, 1, 2, 3].map((n) => item('a', n));
    for (const i of items) q.push('a', 1, i);
    expect(q.remove('a', items[1]!)).toBe(true);
    expect(q.remove('a', items[1]!)).toBe(false);
    expect(q.remove('b', items[2]!)).toBe(false);
    expect(q.remove('a', items[0]!)).toBe(true);
    expect(q.size).toBe(2);
    expect([...q.tenants()]).toEqual([['a', 2]]);
    expect(q.peek()?.n).toBe(2);
    expect(drain(q).map((i) => i.n)).toEqual([2, 3]);
  });

  test('newestOfLongest names the newest item of the tenant waiting most', () => {
    const q = new FairQueue<Item>();
    q.push('a', 1, item('a', 0));
    for (let n = 0; n < 3; n++) q.push('b', 1, item('b', n));
    const victim = q.newestOfLongest()!;
    expect(victim).toMatchObject({ tenant: 'b', n: 2 });
    q.remove('b', victim);
    expect(q.newestOfLongest()).toMatchObject({ tenant: 'b', n: 1 });
    expect(new FairQueue<Item>().newestOfLongest()).toBeUndefined();
  });

  test('an emptied tenant is forgotten and comes back as new', () => {
    const q = new FairQueue<Item>();
    const only = item('a', 0);
    q.push('a', 1, only);
    q.remove('a', only);
    expect(q.size).toBe(0);
    expect(q.peek()).toBeUndefined();
    q.push('a', 2, item('a', 1));
    expect(q.pop()?.n).toBe(1);
  });
});
