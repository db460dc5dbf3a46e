import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { SlotTable } from './slot-table.ts';

/** Keys of handles kept in plain arrays, as the index keeps them. */
function table(initialSlots: number) {
  const a: number[] = [];
  const b: number[] = [];
  const c: number[] = [];
  const slots = new SlotTable({ keyA: (h) => a[h]!, keyB: (h) => b[h]!, keyC: (h) => c[h]! }, initialSlots);
  return { a, b, c, slots };
}

describe('SlotTable', () => {
  test('inserts, finds and removes like a Map through growth past sizes that are not powers of two', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.nat(40), fc.nat(3), fc.nat(0xffffffff)), { maxLength: 600 }),
        fc.integer({ min: 16, max: 40 }),
        (ops, initialSlots) => {
          const { a, b, c, slots } = table(initialSlots);
          const model = new Map<string, number>();
          for (const [insert, x, y, z] of ops) {
            const key = `${x},${y},${z >>> (x % 32)}`;
            const zz = z >>> (x % 32);
            if (insert && !model.has(key)) {
              const h = a.length;
              a.push(x);
              b.push(y);
              c.push(zz);
              slots.insert(h);
              model.set(key, h);
            } else if (!insert) {
              expect(slots.remove(x, y, zz)).toBe(model.delete(key));
            }
          }
          expect(slots.size).toBe(model.size);
          for (const [key, h] of model) {
            const [x, y, z] = key.split(',').map(Number);
            expect(slots.find(x!, y!, z!)).toBe(h);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  test('holds 8 to 12 bytes per entry once it has grown: it grows by half when half full', () => {
    const { a, b, c, slots } = table(16);
    for (let h = 0; h < 100_000; h++) {
      a.push(h % 7);
      b.push(h);
      c.push(h * 31);
      slots.insert(h);
    }
    expect(slots.bytes / slots.size).toBeGreaterThanOrEqual(8);
    expect(slots.bytes / slots.size).toBeLessThanOrEqual(12.01);
    expect(slots.find(3, 3, 93)).toBe(3);
    expect(slots.find(3, 3, 94)).toBe(-1);
  });
});
