import { describe, expect, test } from 'bun:test';
import { fetchCapWarning, MAX_QUOTED_CHARS, postLeg, quoteError, transportMessage } from './upstream.ts';
import { readLegText } from './idle.ts';

describe('quoteError', () => {
  test('takes the message out of the usual error shapes', () => {
    expect(quoteError('{"error":{"message":"boom"}}')).toBe('boom');
    expect(quoteError('{"error":"overloaded"}')).toBe('overloaded');
    expect(quoteError('{"object":"error","message":"too long"}')).toBe('too long');
    expect(quoteError(' plain text \n')).toBe('plain text');
  });

  test('shortens long bodies', () => {
    expect(quoteError('x'.repeat(1000))).toHaveLength(MAX_QUOTED_CHARS + 1);
  });
});

test('transportMessage adds the error code once', () => {
  expect(transportMessage(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe('ECONNREFUSED: refused');
  expect(transportMessage(Object.assign(new Error('ECONNRESET: closed'), { code: 'ECONNRESET' }))).toBe('ECONNRESET: closed');
  expect(transportMessage('odd')).toBe('odd');
});

test('fetchCapWarning speaks up only when Bun would queue admitted requests', () => {
  expect(fetchCapWarning(256, {})).toBeUndefined();
  expect(fetchCapWarning(10_000, {})).toContain('BUN_CONFIG_MAX_HTTP_REQUESTS=10000');
  expect(fetchCapWarning(10_000, { BUN_CONFIG_MAX_HTTP_REQUESTS: '20000' })).toBeUndefined();
  expect(fetchCapWarning(90_000, { BUN_CONFIG_MAX_HTTP_REQUESTS: 'junk' })).toContain('=65535');
});

describe('postLeg', () => {
  test('a plain leg goes over the socket client by default and over fetch when engineClient says so', async () => {
    // fetch sends a user-agent of its own; the socket client sends only the leg's headers.
    const engine = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: async (req) =>
        Response.json({ agent: req.headers.get('user-agent'), body: await req.text(), id: req.headers.get('x-request-id') }),
    });
    try {
      const url = `http://127.0.0.1:${engine.port}/v1/completions`;
      const send = async (client?: { engineClient: 'sockets' | 'fetch' }) =>
        JSON.parse(
          await readLegText(await postLeg(url, { 'x-request-id': 'r1' }, '{"a":1}', new AbortController().signal, 60_000, client), 1 << 20),
        ) as {
          agent: string | null;
          body: string;
          id: string;
        };
      expect(await send()).toEqual({ agent: null, body: '{"a":1}', id: 'r1' });
      expect(await send({ engineClient: 'sockets' })).toEqual({ agent: null, body: '{"a":1}', id: 'r1' });
      const viaFetch = await send({ engineClient: 'fetch' });
      expect(viaFetch.agent).toStartWith('Bun/');
      expect(viaFetch.body).toBe('{"a":1}');
    } finally {
      engine.stop(true);
    }
  });
});
