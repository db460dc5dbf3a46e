import { describe, expect, test } from 'bun:test';
import { TIMELINE_KEEP_MS, CallTimeline } from './call-timeline.ts';

describe('CallTimeline', () => {
  test('a loss during a link call is kept unless stamped before the call began; end returns it once', () => {
    const timeline = new CallTimeline();
    const lost = { code: 1, reason: 'peer-lost' };
    timeline.dropWhileLinking('0', 7n, 5000, lost); // no call out: nothing to keep
    timeline.begin('0', 7n, 5000);
    expect(timeline.end('0', 7n)).toBeUndefined();
    timeline.begin('0', 7n, 5000);
    timeline.dropWhileLinking('0', 7n, 4999, lost);
    expect(timeline.end('0', 7n)).toBeUndefined();
    timeline.begin('0', 7n, 5000);
    timeline.dropWhileLinking('0', 7n, 5000, lost);
    timeline.dropWhileLinking('0', 7n, 5001, { code: 2, reason: 'link-unusable' }); // the first loss stands
    expect(timeline.end('0', 7n)).toEqual(lost);
    expect(timeline.end('0', 7n)).toBeUndefined();
    timeline.begin('0', 8n, 5000);
    timeline.dropWhileLinking('0', 8n, undefined, lost); // unstamped: taken as news
    expect(timeline.end('0', 8n)).toEqual(lost);
  });

  test('an event predates the last settling call of its own link only, and only when strictly earlier', () => {
    const timeline = new CallTimeline();
    expect(timeline.predates('0', 7n, 0)).toBe(false);
    timeline.record('0', 7n, 1000);
    expect(timeline.predates('0', 7n, 999)).toBe(true);
    expect(timeline.predates('0', 7n, 1000)).toBe(false);
    expect(timeline.predates('1', 7n, 999)).toBe(false);
    expect(timeline.predates('0', 8n, 999)).toBe(false);
    // A later call moves the mark; an earlier start never goes unnoticed by a later record.
    timeline.record('0', 7n, 2000);
    expect(timeline.predates('0', 7n, 1500)).toBe(true);
  });

  test('times older than the keep period are swept as new ones come in', () => {
    const timeline = new CallTimeline();
    timeline.record('0', 1n, 0);
    for (let i = 0; i < 2048; i++) timeline.record('0', BigInt(100 + i), TIMELINE_KEEP_MS + 10 + i);
    expect(timeline.predates('0', 1n, -1)).toBe(false);
    expect(timeline.size).toBe(2048);
    expect(timeline.predates('0', 100n, TIMELINE_KEEP_MS)).toBe(true);
  });
});
