import { describe, expect, test } from 'bun:test';
import { syntheticWorkload } from './synthetic.ts';
import { parseTenants, tenantSynthetic, withTenants } from './tenants.ts';

const settings = {
  requests: 600,
  rate: 1,
  input: { kind: 'fixed', value: 64 },
  output: { kind: 'fixed', value: 8 },
  prefixShare: 0,
  prefixGroups: 1,
  blockTokens: 16,
  seed: 3,
} as const;

describe('tenants', () => {
  test('parse NAME:CLASS:RATE lists; every wrong entry names itself', () => {
    expect(parseTenants('chat:interactive:1, bulk:batch:2.5')).toEqual([
      { name: 'chat', priority: 'interactive', rate: 1 },
      { name: 'bulk', priority: 'batch', rate: 2.5 },
    ]);
    expect(() => parseTenants('chat:interactive')).toThrow('entry 1');
    expect(() => parseTenants('a:b:1,c:d:0')).toThrow('entry 2');
    expect(() => parseTenants('a:b:x')).toThrow('RATE > 0');
    expect(() => parseTenants('a b:c:1')).toThrow('entry 1');
    expect(() => parseTenants('a:b:1,a:c:2')).toThrow('named twice');
  });

  test('a synthetic workload: each tenant its own stream at its rate, merged by arrival, indexed anew', () => {
    const workload = tenantSynthetic(settings, parseTenants('chat:interactive:1,bulk:batch:5'));
    const chat = workload.items.filter((i) => i.tenant === 'chat');
    const bulk = workload.items.filter((i) => i.tenant === 'bulk');
    expect(chat).toHaveLength(100);
    expect(bulk).toHaveLength(500);
    expect(chat.every((i) => i.priority === 'interactive')).toBe(true);
    expect(workload.items.map((i) => i.index)).toEqual([...workload.items.keys()]);
    for (let k = 1; k < workload.items.length; k++)
      expect(workload.items[k]!.arrivalMs).toBeGreaterThanOrEqual(workload.items[k - 1]!.arrivalMs);
    // Both streams span about the same time: 100 at 1/s and 500 at 5/s.
    const span = (items: typeof chat) => items.at(-1)!.arrivalMs;
    expect(span(bulk) / span(chat)).toBeGreaterThan(0.7);
    expect(span(bulk) / span(chat)).toBeLessThan(1.4);
    expect(workload.source).toContain('chat (interactive, 1/s)');
  });

  test('any workload dealt to tenants in proportion to their rates, the same way each time', () => {
    const base = syntheticWorkload(settings);
    const dealt = withTenants(base, parseTenants('a:interactive:1,b:batch:3'), 9);
    const a = dealt.items.filter((i) => i.tenant === 'a').length;
    expect(a).toBeGreaterThan(100);
    expect(a).toBeLessThan(200);
    expect(dealt.items.map((i) => i.arrivalMs)).toEqual(base.items.map((i) => i.arrivalMs));
    expect(withTenants(base, parseTenants('a:interactive:1,b:batch:3'), 9)).toEqual(dealt);
  });
});
