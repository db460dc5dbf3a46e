import { describe, expect, test } from 'bun:test';
import { testInstance } from '../../test/doubles/cluster.ts';
import { type Capacity, capacityInto, capacityOf } from './loads.ts';

describe('capacityOf', () => {
  test('free capacity is what was reported minus what is reserved, and the load is the busier resource', () => {
    const instance = testInstance({ id: 0, totalSlots: 100, availSlots: 80, totalBlocks: 1000, availBlocks: 900 });
    expect(capacityOf(instance, { reservedSlots: 30, reservedBlocks: 100 })).toEqual({
      freeSlots: 50,
      freeBlocks: 800,
      load: 0.5,
      capped: false,
    });
  });

  test('an exhausted resource makes the load exactly 1; the request cap alone makes it capped', () => {
    const full = testInstance({ id: 0, availSlots: 0 });
    expect(capacityOf(full, undefined)).toEqual({ freeSlots: 0, freeBlocks: 1000, load: 1, capped: false });
    const roomy = testInstance({ id: 1, availSlots: 50 });
    expect(capacityOf(roomy, { reservedSlots: 2, reservedBlocks: 0 }, 2)).toEqual({
      freeSlots: 0,
      freeBlocks: 1000,
      load: 1,
      capped: true,
    });
  });
});

describe('capacityInto', () => {
  test('writes what capacityOf returns into the target, overwriting what it held, and returns the target', () => {
    const cases: [Parameters<typeof capacityOf>[0], Parameters<typeof capacityOf>[1], number][] = [
      [testInstance({ id: 0, availSlots: 80, availBlocks: 900 }), { reservedSlots: 30, reservedBlocks: 100 }, Infinity],
      [testInstance({ id: 1, availSlots: 0 }), undefined, Infinity],
      [testInstance({ id: 2, availSlots: 50 }), { reservedSlots: 2, reservedBlocks: 0 }, 2],
      [testInstance({ id: 3, availBlocks: 0 }), undefined, 10],
    ];
    // The target starts from another case's values, as a scheduler node does from its last refresh.
    const target: { -readonly [K in keyof Capacity]: Capacity[K] } & { id: string } = {
      id: 'node',
      freeSlots: 7,
      freeBlocks: 7,
      load: 0.25,
      capped: true,
    };
    for (const [instance, reserved, maxRequests] of cases) {
      expect(capacityInto(target, instance, reserved, maxRequests)).toBe(target);
      expect({ ...target }).toEqual({ id: 'node', ...capacityOf(instance, reserved, maxRequests) });
    }
  });
});
