import { afterAll, describe, expect, test } from 'bun:test';
import { closedLoop, openLoop, type RunSettings } from './runner.ts';
import type { Workload } from './workload.ts';

/**
 * An engine that holds every request until the test releases it, counting how many it holds at
 * once: the closed loop's concurrency is then what the engine saw, not a guess from timing.
 */
let inFlight = 0;
let maxInFlight = 0;
const waiting: (() => void)[] = [];
let arrived: (() => void) | undefined;
const encoder = new TextEncoder();

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch() {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise<void>((resolve) => {
      waiting.push(resolve);
      arrived?.();
    });
    inFlight--;
    return new Response(encoder.encode('data: {"choices":[{"index":0,"text":" a"}]}\n\ndata: [DONE]\n\n'), {
      headers: { 'content-type': 'text/event-stream' },
    });
  },
});
afterAll(() => server.stop(true));

function workload(n: number): Workload {
  return {
    kind: 'synthetic',
    source: 'test',
    blockTokens: 4,
    items: Array.from({ length: n }, (_, index) => ({ index, arrivalMs: 0, inputTokens: 8, outputTokens: 1, hashIds: [index, index + 1] })),
  };
}

function settings(n: number, stop = new AbortController().signal): RunSettings {
  return {
    target: { baseUrl: `http://127.0.0.1:${server.port}`, endpoint: 'completions', model: 'm', requestTimeoutMs: 30_000 },
    workload: workload(n),
    maxRequests: n,
    durationMs: 60_000,
    stop,
    idPrefix: 'bench-t',
  };
}

/** Releases held requests one at a time as they arrive, until `done` settles. */
async function drain<T>(done: Promise<T>): Promise<T> {
  let finished = false;
  void done.finally(() => (finished = true));
  while (!finished) {
    if (waiting.length > 0) waiting.shift()!();
    else await Promise.race([new Promise<void>((resolve) => (arrived = resolve)), done]);
  }
  return done;
}

describe('closedLoop', () => {
  test('keeps exactly `concurrency` requests in flight and sends every request once', async () => {
    maxInFlight = 0;
    const run = closedLoop(settings(12), 3);
    // Wait until three are held: the loop must not send a fourth before one ends.
    while (waiting.length < 3) await new Promise<void>((resolve) => (arrived = resolve));
    expect(inFlight).toBe(3);
    const result = await drain(run);
    expect(maxInFlight).toBe(3);
    expect(result.mode).toBe('closed');
    expect(result.concurrency).toBe(3);
    expect(result.records.map((r) => r.index)).toEqual([...Array(12).keys()]);
    expect(result.records.every((r) => r.outcome === 'ok' && r.scheduledMs === null && r.driftMs === null)).toBe(true);
    expect(new Set(result.records.map((r) => r.requestId)).size).toBe(12);
  });
});

describe('openLoop', () => {
  test('a stop cuts the requests in flight and sends no more', async () => {
    const stop = new AbortController();
    const run = openLoop({
      ...settings(5, stop.signal),
      workload: { ...workload(5), items: workload(5).items.map((i) => ({ ...i, arrivalMs: i.index < 2 ? 0 : 3_600_000 })) },
    });
    while (waiting.length < 2) await new Promise<void>((resolve) => (arrived = resolve));
    stop.abort();
    const result = await run;
    waiting.splice(0).forEach((release) => release());
    expect(result.stoppedBy).toBe('signal');
    expect(result.records.map((r) => [r.index, r.outcome])).toEqual([
      [0, 'cut'],
      [1, 'cut'],
    ]);
  });

  test('the time bound cuts what is still running and reports itself', async () => {
    const result = await openLoop({ ...settings(2), durationMs: 50 });
    waiting.splice(0).forEach((release) => release());
    expect(result.stoppedBy).toBe('time_bound');
    expect(result.records.map((r) => r.outcome)).toEqual(['cut', 'cut']);
  });
});
