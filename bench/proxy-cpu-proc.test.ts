import { describe, expect, test } from 'bun:test';
import { garbageIn } from './proxy-cpu-proc.ts';

/** One collection as JSC logs it: START with the heap before, one line per pause, END with the cycle. */
function collection(kind: string, beforeKb: number, afterKb: number, pausesMs: number[]): string {
  const lines = [`Requesting GC because bytes allocated this cycle: 1 exceed bytes allowed: 1`];
  const last = pausesMs.length - 1;
  pausesMs.forEach((p, i) => {
    const head = i === 0 ? `START M ${beforeKb}kb => ${kind}, a=0kb hf=0.000 mu=0.600 v=0kb` : 'M a=16kb v=577kb (C:570 M:6)';
    const tail = i === last ? `=> ${afterKb}kb, p=${p}ms (max 9.0), cycle 3.0ms END]` : `p=${p}ms (max 9.0)...]`;
    lines.push(`[GC<0x1>: ${head} i#1:N<CsMsrShDMsm(52)SrbBcs> 7+52 ${tail}`);
  });
  lines.push('GC END!', '[GC<0x1>: epilogue 0.007ms]');
  return lines.join('\n');
}

describe('garbageIn', () => {
  test('reads collections logged on one line and over several, between the two forced ones', () => {
    const log = [
      collection('FullCollection', 9000, 5000, [4]),
      'pdlink: a line of the process in between',
      collection('EdenCollection', 15000, 6000, [0.5, 0.25]),
      collection('EdenCollection', 14000, 7000, [1]),
      collection('FullCollection', 13000, 5500, [1, 2, 3]),
      collection('FullCollection', 8000, 5400, [5]),
    ].join('\n');
    const g = garbageIn(log);
    // Allocated: what each collection found on top of what the one before left.
    expect(g.bytes).toBe((15000 - 5000 + (14000 - 6000) + (13000 - 7000) + (8000 - 5500)) * 1024);
    expect(g.gcs).toBe(3);
    expect(g.fullGcs).toBe(1);
    expect(g.pauseMs).toBeCloseTo(0.75 + 1 + 6, 9);
    expect(g.maxPauseMs).toBe(6);
  });

  test('nothing between the forced collections, or no log at all', () => {
    const g = garbageIn([collection('FullCollection', 9000, 5000, [4]), collection('FullCollection', 5100, 5000, [4])].join('\n'));
    expect(g).toEqual({ bytes: 100 * 1024, gcs: 0, fullGcs: 0, maxPauseMs: 0, pauseMs: 0 });
    expect(garbageIn('')).toEqual({ bytes: 0, gcs: 0, fullGcs: 0, maxPauseMs: 0, pauseMs: 0 });
  });
});
