import { describe, expect, test } from 'bun:test';
import { assignRoles, GROUP_SIZE, groupOf, peersOf } from './assign.ts';

const open = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i }));

describe('assignRoles', () => {
  test('keeps fixed roles and splits open ones one to one when no rate is set', () => {
    const roles = assignRoles([{ id: 5, role: 'decode' }, { id: 1 }, { id: 2 }, { id: 3 }], { p: 0, d: 0 });
    expect(roles.get(5)).toBe('decode');
    expect([1, 2, 3].map((id) => roles.get(id))).toEqual(['prefill', 'prefill', 'decode']);
  });

  test('follows default_p_rate:default_d_rate', () => {
    const roles = assignRoles(open(8), { p: 1, d: 3 });
    const count = (r: string) => [...roles.values()].filter((x) => x === r).length;
    expect(count('prefill')).toBe(2);
    expect(count('decode')).toBe(6);
  });

  test('a zero rate on one side gives every open instance the other role', () => {
    const roles = assignRoles(open(3), { p: 0, d: 2 });
    expect([...roles.values()]).toEqual(['decode', 'decode', 'decode']);
  });
});

describe('groupOf', () => {
  test('one group up to 16 instances, every P peered with every D', () => {
    const roles = assignRoles(
      Array.from({ length: 4 }, (_, i) => ({ id: i, role: i < 2 ? ('prefill' as const) : ('decode' as const) })),
      { p: 0, d: 0 },
    );
    const placements = groupOf(roles);
    expect(new Set([...placements.values()].map((p) => p.group))).toEqual(new Set([0]));
    const peers = peersOf(placements);
    expect(peers.get(0)).toEqual([2, 3]);
    expect(peers.get(3)).toEqual([0, 1]);
  });

  test('G = ceil(N/16); P_i in group i mod G, D_i in group (i + pNum) mod G', () => {
    // 10 P (ids 0..9) and 23 D (ids 100..122): N = 33, G = 3.
    const roles = new Map<number, 'prefill' | 'decode'>();
    for (let i = 0; i < 10; i++) roles.set(i, 'prefill');
    for (let i = 0; i < 23; i++) roles.set(100 + i, 'decode');
    const placements = groupOf(roles);
    for (let i = 0; i < 10; i++) expect(placements.get(i)!.group).toBe(i % 3);
    for (let i = 0; i < 23; i++) expect(placements.get(100 + i)!.group).toBe((i + 10) % 3);
    const sizes = [0, 1, 2].map((g) => [...placements.values()].filter((p) => p.group === g).length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(GROUP_SIZE);
    const peers = peersOf(placements);
    // D_0 is in group 10 mod 3 = 1, with P_1, P_4, P_7.
    expect(peers.get(100)).toEqual([1, 4, 7]);
    expect(peers.get(1)).toEqual([...peers].filter(([id]) => id >= 100 && placements.get(id)!.group === 1).map(([id]) => id));
  });

  test('an empty cluster has no groups', () => {
    expect(groupOf(new Map()).size).toBe(0);
  });
});
