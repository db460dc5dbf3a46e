import { describe, expect, test } from 'bun:test';
import { ByteSlabs } from './byte-slabs.ts';

const MiB = 1 << 20;

describe('ByteSlabs', () => {
  test('a slab given back is taken again: the smallest that fits, never one in use', () => {
    const slabs = new ByteSlabs();
    const a = slabs.take(3 * MiB);
    const b = slabs.take(1);
    expect(a.byteLength).toBe(3 * MiB);
    expect(b.byteLength).toBe(MiB);
    expect(slabs.take(MiB)).not.toBe(b); // b is in use
    slabs.give(a);
    slabs.give(b);
    expect(slabs.take(MiB / 2)).toBe(b);
    expect(slabs.take(2 * MiB)).toBe(a);
    expect(slabs.keptBytes).toBe(0);
  });

  test('few and not too large are kept: past the count the smallest goes, a huge one is never kept', () => {
    const slabs = new ByteSlabs(2, 8 * MiB);
    const [one, two, three] = [slabs.take(MiB), slabs.take(2 * MiB), slabs.take(3 * MiB)];
    slabs.give(one!);
    slabs.give(two!);
    slabs.give(three!);
    expect(slabs.keptBytes).toBe(5 * MiB);
    expect(slabs.take(MiB)).toBe(two!);
    slabs.give(slabs.take(16 * MiB));
    expect(slabs.keptBytes).toBe(3 * MiB);
    // Given back twice: kept once.
    slabs.give(three!);
    expect(slabs.keptBytes).toBe(3 * MiB);
  });
});
