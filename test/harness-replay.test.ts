/**
 * `pdlink bench`'s open-loop replay of a real trace on a simulated 2 P + 2 D cluster: every request
 * is sent at its scaled trace time (drift = send − schedule, reported per request and as
 * percentiles), completes, and names the P and D that served it through the proxy's headers.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';
import { runBench } from '../src/harness/bench-run.ts';
import type { Progress } from '../src/harness/progress.ts';
import { BenchReportSchema } from '../src/harness/report-schema.ts';
import { parseTrace } from '../src/harness/trace.ts';
import { SimCluster } from './support/sim-cluster.ts';

/** The first 300 requests of Mooncake's synthetic trace, kept with the tests (see fixtures/traces/README.md). */
const TRACE_FILE = join(import.meta.dir, 'fixtures', 'traces', 'mooncake_synthetic_head300.jsonl');
const SCALING = { timeScale: 0.05, lengthScale: 0.02, outputScale: 0.02, maxRequests: 300 };

let cluster: SimCluster;

beforeAll(async () => {
  cluster = await SimCluster.start({ prefill: 2, decode: 2, engine: { numBlocks: 4096, maxModelLen: 8192 } });
});

afterAll(async () => {
  await cluster?.stop();
});

const silent: Progress = { start() {}, record() {}, stop() {} };

describe('trace replay on the simulated cluster', () => {
  test('a few hundred trace requests are sent at their scaled times, complete, and name their P and D', async () => {
    const workload = parseTrace(readFileSync(TRACE_FILE, 'utf8'), TRACE_FILE, SCALING);
    expect(workload.items).toHaveLength(300);
    const report = await runBench(
      {
        target: { baseUrl: cluster.proxyUrl, endpoint: 'completions', model: cluster.model, requestTimeoutMs: 60_000 },
        workload,
        maxRequests: 300,
        durationMs: 120_000,
        concurrency: [],
        slo: { ttftMs: null, tpotMs: null },
        settings: {},
      },
      new AbortController().signal,
      silent,
    );
    v.parse(BenchReportSchema, JSON.parse(JSON.stringify(report)));
    expect(report.partial).toBe(false);
    const run = report.runs[0]!;
    expect(run.stoppedBy).toBe('complete');
    const failures = run.requests.filter((r) => r.outcome !== 'ok').map((r) => `${r.index}: ${r.status} ${r.error}`);
    expect(failures).toEqual([]);
    expect(run.requests).toHaveLength(300);
    for (const [i, r] of run.requests.entries()) {
      const item = workload.items[i]!;
      // The schedule is the trace's, scaled; drift is what the harness adds, never negative.
      expect(r.scheduledMs).toBe(item.arrivalMs);
      expect(r.driftMs).toBe(r.sentMs - item.arrivalMs);
      expect(r.driftMs!).toBeGreaterThanOrEqual(0);
      expect(r.outputTokens).toBe(item.outputTokens);
      expect(r.ttftMs!).toBeLessThanOrEqual(r.e2eMs);
    }
    expect(run.summary.driftMs.count).toBe(300);
    expect(run.summary.driftMs.p99).not.toBeNull();
    // Every answer names its instances, and both P and both D served.
    const prefills = new Set(cluster.prefills.map((e) => String(e.id)));
    const decodes = new Set(cluster.decodes.map((e) => String(e.id)));
    expect(run.requests.every((r) => prefills.has(r.prefill ?? '') && decodes.has(r.decode ?? ''))).toBe(true);
    expect(new Set(run.requests.map((r) => r.prefill)).size).toBe(2);
    expect(new Set(run.requests.map((r) => r.decode)).size).toBe(2);
    // The hash structure survives the scaling (the trace's first minutes share little yet: a cold start).
    expect(report.workload.prefixReuse).toBeGreaterThan(0);
  });
});
