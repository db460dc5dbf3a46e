/**
 * Ctrl-C during `pdlink bench` (a real process): the run stops, the requests still running are
 * cut, and the report written holds what was measured and says it is partial. The engine answers
 * the first three requests and holds every later one open, so exactly three complete before the
 * signal, which is sent once the progress output says so.
 */
import { afterAll, expect, test } from 'bun:test';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { BenchReportSchema } from '../src/harness/report-schema.ts';
import { REPO_ROOT } from './support/child.ts';
import { until } from './support/sim-cluster.ts';

const ANSWERED = 3;
let received = 0;
const held: ReadableStreamDefaultController<Uint8Array>[] = [];
const encoder = new TextEncoder();

const engine = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  idleTimeout: 0,
  fetch() {
    const answer = ++received <= ANSWERED;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('data: {"choices":[{"index":0,"text":" a"}]}\n\n'));
        if (!answer) {
          held.push(controller);
          return;
        }
        controller.enqueue(encoder.encode('data: {"choices":[],"usage":{"completion_tokens":1}}\n\ndata: [DONE]\n\n'));
        controller.close();
      },
    });
    return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
  },
});
const dir = mkdtempSync(join(tmpdir(), 'pdlink-bench-sigint-'));

afterAll(() => {
  engine.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

test('SIGINT after three completed requests writes a partial report with them and the rest cut', async () => {
  const out = join(dir, 'report');
  const child = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'src', 'main.ts'),
      'bench',
      '--base-url',
      `http://127.0.0.1:${engine.port}`,
      '--model',
      'fake',
      '--rate',
      '1000',
      '--max-requests',
      '10',
      '--input-len',
      '8',
      '--output-len',
      '1',
      '--out',
      out,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  try {
    await until(
      async () => (output.includes(`open ${ANSWERED}/10 requests done`) && received === 10 ? true : undefined),
      30_000,
      () => `progress not seen (received ${received}):\n${output}`,
    );
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  expect(output).toContain(`partial report written to ${out}.json and ${out}.html`);
  expect(existsSync(`${out}.html`)).toBe(true);
  const report = v.parse(BenchReportSchema, JSON.parse(readFileSync(`${out}.json`, 'utf8')));
  expect(report.partial).toBe(true);
  expect(report.runs).toHaveLength(1);
  const run = report.runs[0]!;
  expect(run.stoppedBy).toBe('signal');
  expect(run.summary.completed).toBe(ANSWERED);
  expect(run.summary.cut).toBe(10 - ANSWERED);
  expect(run.summary.failed).toBe(0);
  expect(run.requests.filter((r) => r.outcome === 'cut').every((r) => r.error === 'cut: the run ended first')).toBe(true);
});
