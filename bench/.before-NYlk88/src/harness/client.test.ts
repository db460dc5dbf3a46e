import { afterAll, describe, expect, test } from 'bun:test';
import { sendRequest, type SendOptions } from './client.ts';
import type { Target } from './target.ts';

/**
 * A scripted engine: each token chunk is stamped with a scripted time on a virtual clock the
 * client reads, and the next chunk waits until the client has timed the previous one, so the
 * times the client records are exactly the script's, whatever the machine's speed.
 */
let clock = 0;
let tokenSeen: (() => void) | undefined;
const encoder = new TextEncoder();
const event = (payload: unknown): Uint8Array => encoder.encode(`data: ${JSON.stringify(payload)}\n\n`);

interface Script {
  readonly tokens: readonly { at: number; text: string }[];
  readonly endAt: number;
  readonly usage?: number;
  readonly done?: boolean;
}
let script: Script = { tokens: [], endAt: 0 };
let lastBody: Record<string, unknown> | undefined;

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    lastBody = (await req.json()) as Record<string, unknown>;
    const chat = new URL(req.url).pathname === '/v1/chat/completions';
    if (lastBody['model'] === 'refuse') return Response.json({ error: { message: 'engine overloaded' } }, { status: 503 });
    const current = script;
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        for (const token of current.tokens) {
          const seen = new Promise<void>((resolve) => (tokenSeen = resolve));
          clock = token.at;
          const choice = chat ? { index: 0, delta: { content: token.text } } : { index: 0, text: token.text, finish_reason: null };
          controller.enqueue(event({ choices: [choice] }));
          await seen;
        }
        clock = current.endAt;
        if (current.usage !== undefined) controller.enqueue(event({ choices: [], usage: { completion_tokens: current.usage } }));
        if (current.done !== false) controller.enqueue(encoder.encode('data: [DONE]\n\n'));
        controller.close();
      },
    });
    return new Response(stream, {
      headers: { 'content-type': 'text/event-stream', 'x-pdlink-prefill': '101', 'x-pdlink-decode': '202' },
    });
  },
});
afterAll(() => server.stop(true));

const target: Target = { baseUrl: `http://127.0.0.1:${server.port}`, endpoint: 'completions', model: 'fake', requestTimeoutMs: 30_000 };

function send(overrides: Partial<SendOptions> = {}): ReturnType<typeof sendRequest> {
  clock = 1000;
  return sendRequest({
    target,
    index: 3,
    requestId: 'bench-t-3',
    prompt: ' abc def',
    inputTokens: 2,
    maxTokens: 4,
    scheduledMs: 990,
    now: () => clock,
    cut: new AbortController().signal,
    onToken: () => tokenSeen?.(),
    ...overrides,
  });
}

describe('sendRequest on a scripted engine', () => {
  test('TTFT, inter-token gaps, TPOT and end to end follow the scripted times', async () => {
    script = {
      tokens: [
        { at: 1250, text: ' a' },
        { at: 1270, text: ' b' },
        { at: 1300, text: ' c' },
        { at: 1340, text: ' d' },
      ],
      endAt: 1345,
      usage: 4,
    };
    const record = await send();
    expect(record.outcome).toBe('ok');
    expect(record.status).toBe(200);
    expect(record.error).toBeNull();
    expect(record.sentMs).toBe(1000);
    expect(record.driftMs).toBe(10);
    expect(record.ttftMs).toBe(250);
    expect(record.itlMs).toEqual([20, 30, 40]);
    // (1340 − 1250) / (4 − 1)
    expect(record.tpotMs).toBe(30);
    expect(record.e2eMs).toBe(345);
    expect(record.outputTokens).toBe(4);
    expect(record.prefill).toBe('101');
    expect(record.decode).toBe('202');
    expect(lastBody).toMatchObject({
      model: 'fake',
      prompt: ' abc def',
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  test('TPOT divides by the usage count when a chunk carries several tokens', async () => {
    script = {
      tokens: [
        { at: 1100, text: ' a' },
        { at: 1200, text: ' b c d e' },
      ],
      endAt: 1210,
      usage: 5,
    };
    const record = await send();
    expect(record.ttftMs).toBe(100);
    expect(record.itlMs).toEqual([100]);
    expect(record.tpotMs).toBe(25);
    expect(record.outputTokens).toBe(5);
  });

  test('one output token has a TTFT and no TPOT', async () => {
    script = { tokens: [{ at: 1500, text: ' a' }], endAt: 1501, usage: 1 };
    const record = await send();
    expect(record.ttftMs).toBe(500);
    expect(record.tpotMs).toBeNull();
    expect(record.itlMs).toEqual([]);
  });

  test('an engine error status is recorded with its message and no latencies', async () => {
    const record = await send({ target: { ...target, model: 'refuse' } });
    expect(record.outcome).toBe('error');
    expect(record.status).toBe(503);
    expect(record.error).toBe('HTTP 503: engine overloaded');
    expect(record.ttftMs).toBeNull();
  });

  test('a stream that ends without [DONE] is an error, not a success', async () => {
    script = { tokens: [{ at: 1100, text: ' a' }], endAt: 1150, done: false };
    const record = await send();
    expect(record.outcome).toBe('error');
    expect(record.error).toBe('stream ended without [DONE]');
    expect(record.ttftMs).toBe(100);
  });

  test('an unreachable server is status 0 with the transport error', async () => {
    const record = await send({ target: { ...target, baseUrl: 'http://127.0.0.1:1' } });
    expect(record.outcome).toBe('error');
    expect(record.status).toBe(0);
    expect(record.error).not.toBeNull();
  });

  test('a request cut by the run is counted as cut', async () => {
    const cut = new AbortController();
    script = {
      tokens: [
        { at: 1100, text: ' a' },
        { at: 1200, text: ' b' },
      ],
      endAt: 1300,
    };
    const record = await send({
      cut: cut.signal,
      onToken: () => {
        cut.abort();
        tokenSeen?.();
      },
    });
    expect(record.outcome).toBe('cut');
    expect(record.error).toBe('cut: the run ended first');
  });

  test('the chat endpoint sends messages and times delta content the same way', async () => {
    script = {
      tokens: [
        { at: 1040, text: 'x' },
        { at: 1060, text: 'y' },
      ],
      endAt: 1061,
      usage: 2,
    };
    const record = await send({ target: { ...target, endpoint: 'chat' } });
    expect(lastBody).toMatchObject({ messages: [{ role: 'user', content: ' abc def' }], max_tokens: 4 });
    expect(lastBody).not.toHaveProperty('prompt');
    expect([record.outcome, record.ttftMs, record.tpotMs, record.e2eMs]).toEqual(['ok', 40, 20, 61]);
  });
});
