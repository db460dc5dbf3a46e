import { describe, expect, test } from 'bun:test';
import { SequenceTracker } from './sequence.ts';

describe('SequenceTracker', () => {
  test('the first batch: a gap from 0 when a replay can fill it, else the start', () => {
    expect(new SequenceTracker().judge(5n, true)).toBe('gap');
    expect(new SequenceTracker().judge(5n, false)).toBe('apply');
    expect(new SequenceTracker().judge(0n, true)).toBe('apply');
    expect(new SequenceTracker().replayFrom).toBe(0n);
  });

  test('next applies, further is a gap, back is a restart; replayed batches before the next are duplicates', () => {
    const t = new SequenceTracker();
    t.accept(3n);
    expect([t.judge(4n, true), t.judge(6n, true), t.judge(0n, true), t.judge(3n, true)]).toEqual(['apply', 'gap', 'restart', 'restart']);
    expect(t.replayFrom).toBe(4n);
    expect([t.judgeReplayed(2n), t.judgeReplayed(4n), t.judgeReplayed(5n)]).toEqual(['duplicate', 'apply', 'gap']);
  });
});
