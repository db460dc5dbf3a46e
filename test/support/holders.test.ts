import { describe, expect, test } from 'bun:test';
import { held } from './holders.ts';

const sample = (sent: number, at: number, holds: boolean | undefined) => ({ sent, at, holds });

describe('held: what the samples prove', () => {
  test('two answers in a row that hold prove the span from the first arrival to the second sending', () => {
    expect(held([sample(0, 10, true), sample(50, 60, true), sample(100, 110, true)])).toEqual([
      [10, 50],
      [60, 100],
    ]);
  });

  test('a lone answer, an answer that does not hold and a missing answer prove nothing', () => {
    expect(held([sample(0, 10, true), sample(50, 60, false), sample(100, 110, true), sample(150, 160, undefined)])).toEqual([]);
  });

  test('an answer that arrived late does not stretch the span past the next sending', () => {
    // The second probe was sent at 50 and answered at 400 (the reader was starved): only [10, 50] is proven.
    expect(held([sample(0, 10, true), sample(50, 400, true)])).toEqual([[10, 50]]);
  });
});
