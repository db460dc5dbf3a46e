import { describe, expect, test } from 'bun:test';
import { SETTLED_KEEP_MS, SettledLinks } from './settled.ts';

describe('SettledLinks', () => {
  test('an event predates the last settling call of its own link only, and only when strictly earlier', () => {
    const settled = new SettledLinks();
    expect(settled.predates('0', 7n, 0)).toBe(false);
    settled.record('0', 7n, 1000);
    expect(settled.predates('0', 7n, 999)).toBe(true);
    expect(settled.predates('0', 7n, 1000)).toBe(false);
    expect(settled.predates('1', 7n, 999)).toBe(false);
    expect(settled.predates('0', 8n, 999)).toBe(false);
    // A later call moves the mark; an earlier start never goes unnoticed by a later record.
    settled.record('0', 7n, 2000);
    expect(settled.predates('0', 7n, 1500)).toBe(true);
  });

  test('times older than the keep period are swept as new ones come in', () => {
    const settled = new SettledLinks();
    settled.record('0', 1n, 0);
    for (let i = 0; i < 2048; i++) settled.record('0', BigInt(100 + i), SETTLED_KEEP_MS + 10 + i);
    expect(settled.predates('0', 1n, -1)).toBe(false);
    expect(settled.size).toBe(2048);
    expect(settled.predates('0', 100n, SETTLED_KEEP_MS)).toBe(true);
  });
});
