import { describe, expect, test } from 'bun:test';
import type { RequestRecord } from './client.ts';
import { meetsSlo, percentile, percentiles, summarize } from './stats.ts';

function record(over: Partial<RequestRecord>): RequestRecord {
  return {
    index: 0,
    requestId: 'r',
    scheduledMs: 0,
    sentMs: 0,
    driftMs: 0,
    inputTokens: 10,
    maxTokens: 5,
    outputTokens: 5,
    status: 200,
    outcome: 'ok',
    error: null,
    ttftMs: 100,
    tpotMs: 10,
    e2eMs: 140,
    itlMs: [10, 10, 10, 10],
    prefill: null,
    decode: null,
    tenant: null,
    ...over,
  };
}

describe('percentiles', () => {
  test('interpolate between closest ranks', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5);
    expect(percentile([0, 10], 90)).toBe(9);
    expect(percentiles([5, 1, 3])).toEqual({ count: 3, mean: 3, p50: 3, p90: 4.6, p99: 4.96, max: 5 });
  });

  test('an empty sample has nulls, not zeros', () => {
    expect(percentiles([])).toEqual({ count: 0, mean: null, p50: null, p90: null, p99: null, max: null });
  });
});

describe('summarize', () => {
  test('throughput, goodput under both SLOs and errors by status', () => {
    const records = [
      record({ ttftMs: 100, tpotMs: 10 }),
      record({ ttftMs: 300, tpotMs: 10 }), // misses the TTFT SLO
      record({ ttftMs: 100, tpotMs: 50 }), // misses the TPOT SLO
      record({ ttftMs: 100, tpotMs: null, outputTokens: 1 }), // one token: no TPOT to miss
      record({ outcome: 'error', status: 503, ttftMs: null, tpotMs: null }),
      record({ outcome: 'error', status: 0, ttftMs: null, tpotMs: null }),
      record({ outcome: 'cut', status: 200, ttftMs: null, tpotMs: null }),
    ];
    const s = summarize(records, 2000, { ttftMs: 200, tpotMs: 20 });
    expect([s.requests, s.completed, s.failed, s.cut]).toEqual([7, 4, 2, 1]);
    expect(s.errorsByStatus).toEqual({ '503': 1, '0': 1 });
    expect(s.goodput).toEqual({ requests: 2, requestsPerS: 1, share: 2 / 7 });
    expect(s.throughput.requestsPerS).toBe(2);
    expect(s.throughput.outputTokensPerS).toBe((5 + 5 + 5 + 1) / 2);
    expect(s.ttftMs.count).toBe(4);
    expect(s.tpotMs.count).toBe(3);
  });

  test('without SLOs every completed request is good', () => {
    expect(meetsSlo(record({ ttftMs: 1e6 }), { ttftMs: null, tpotMs: null })).toBe(true);
    expect(meetsSlo(record({ outcome: 'error' }), { ttftMs: null, tpotMs: null })).toBe(false);
  });
});
