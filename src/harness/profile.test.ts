import { afterAll, describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { PdProfile } from '../schema/pd-profile.ts';
import { measureProfile } from './profile.ts';
import type { Progress } from './progress.ts';

/** An engine that streams `max_tokens` tokens at once, and counts the prompts' sizes it was sent. */
const seen: { maxTokens: number; promptChars: number }[] = [];
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as { max_tokens: number; prompt: string };
    seen.push({ maxTokens: body.max_tokens, promptChars: body.prompt.length });
    const events = Array.from({ length: body.max_tokens }, () => 'data: {"choices":[{"index":0,"text":" a"}]}\n\n').join('');
    return new Response(`${events}data: [DONE]\n\n`, { headers: { 'content-type': 'text/event-stream' } });
  },
});
afterAll(() => server.stop(true));

const quiet: Progress = { start: () => {}, record: () => {}, stop: () => {} };

describe('measureProfile', () => {
  test('a prefill sweep (one output token, each rate) and a decode sweep (each concurrency): a profile the planner reads', async () => {
    const profile = await measureProfile(
      {
        target: { baseUrl: `http://127.0.0.1:${server.port}`, endpoint: 'completions', model: 'm', requestTimeoutMs: 10_000 },
        prefillInputTokens: 300,
        rates: [200, 400],
        decodeInputTokens: 16,
        decodeOutputTokens: 5,
        concurrency: [1, 2],
        requestsPerPoint: 6,
        pointDurationMs: 30_000,
        seed: 1,
      },
      new AbortController().signal,
      quiet,
    );
    expect(v.parse(PdProfile, JSON.parse(JSON.stringify(profile)))).toBeDefined();
    expect(profile.prefill.points.map((p) => [p.requestsPerS, p.promptTokensPerS, p.completed, p.failed])).toEqual([
      [200, 60_000, 6, 0],
      [400, 120_000, 6, 0],
    ]);
    expect(profile.prefill.points.every((p) => p.ttftP90Ms !== null && p.ttftP90Ms >= p.ttftP50Ms!)).toBe(true);
    expect(profile.decode.points.map((p) => [p.concurrency, p.completed])).toEqual([
      [1, 6],
      [2, 6],
    ]);
    expect(profile.decode.points.every((p) => p.outputTokensPerS > 0 && p.tpotP90Ms !== null)).toBe(true);
    // 12 prefill requests of one token, then 12 decode requests of five.
    expect(seen.map((s) => s.maxTokens)).toEqual([...Array(12).fill(1), ...Array(12).fill(5)]);
  });

  test('a stop ends the sweeps with what was measured', async () => {
    const stop = new AbortController();
    stop.abort();
    const profile = await measureProfile(
      {
        target: { baseUrl: `http://127.0.0.1:${server.port}`, endpoint: 'completions', model: 'm', requestTimeoutMs: 10_000 },
        prefillInputTokens: 10,
        rates: [1],
        decodeInputTokens: 4,
        decodeOutputTokens: 2,
        concurrency: [1],
        requestsPerPoint: 2,
        pointDurationMs: 1000,
        seed: 1,
      },
      stop.signal,
      quiet,
    );
    expect(profile.prefill.points).toEqual([]);
    expect(profile.decode.points).toEqual([]);
  });
});
