import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { IdMap } from './id-map.ts';

/** Ids on both sides of the array's reach, and keys no instance has. */
const id = fc.oneof(fc.nat(40), fc.constantFrom(16_383, 16_384, 16_385, 2 ** 40, Number.MAX_SAFE_INTEGER, -1, 0.5, -0));

type Op = { kind: 'set' | 'delete' | 'get'; id: number; value: number };
const op: fc.Arbitrary<Op> = fc.record({ kind: fc.constantFrom('set', 'delete', 'get'), id, value: fc.nat() });

describe('IdMap', () => {
  test('answers as a Map does after any sequence of sets and deletes', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const map = new IdMap<{ v: number }>();
        const model = new Map<number, { v: number }>();
        for (const o of ops) {
          // -0 and 0 are one key, as in a Map.
          const key = o.id === 0 ? 0 : o.id;
          if (o.kind === 'set') {
            const value = { v: o.value };
            map.set(o.id, value);
            model.set(key, value);
          } else if (o.kind === 'delete') {
            expect(map.delete(o.id)).toBe(model.delete(key));
          }
          expect(map.get(o.id)).toBe(model.get(key));
          expect(map.has(o.id)).toBe(model.has(key));
          expect(map.size).toBe(model.size);
        }
        const byId = (a: [number, unknown], b: [number, unknown]) => a[0] - b[0];
        expect([...map.entries()].sort(byId)).toEqual([...model.entries()].sort(byId));
        expect([...map].length).toBe(model.size);
        expect(new Set(map.values())).toEqual(new Set(model.values()));
      }),
      { numRuns: 500 },
    );
  });

  test('small ids come out ascending, then the others in insertion order; deleting while iterating is safe', () => {
    const map = new IdMap<string>();
    for (const key of [2 ** 40, 7, 3, 20_000, 0]) map.set(key, String(key));
    expect([...map.entries()].map(([key]) => key)).toEqual([0, 3, 7, 2 ** 40, 20_000]);
    for (const [key] of map) if (key !== 7) map.delete(key);
    expect([...map.values()]).toEqual(['7']);
    expect(map.get(NaN)).toBeUndefined();
  });
});
