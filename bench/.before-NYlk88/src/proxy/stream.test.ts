import { describe, expect, test } from 'bun:test';
import { errors, type PdlinkError } from '../core/errors.ts';
import { lastEventEnd, MAX_HELD_BYTES, relayStream, type ChunkReader } from './stream.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A reader that yields `chunks`, then ends or fails with `failure`. */
function scriptedReader(chunks: string[], failure?: Error): ChunkReader & { cancelled: unknown[] } {
  const queue = chunks.map((c) => enc.encode(c));
  const cancelled: unknown[] = [];
  return {
    cancelled,
    read: async () => {
      const next = queue.shift();
      if (next !== undefined) return { done: false, value: next };
      if (failure !== undefined) throw failure;
      return { done: true };
    },
    cancel: async (reason) => {
      cancelled.push(reason);
    },
  };
}

function recorder(error: PdlinkError | null = errors.upstreamFailed('decode failed mid-stream')) {
  const log: string[] = [];
  return {
    log,
    handlers: {
      onEnd: () => log.push('end'),
      onError: (err: unknown) => {
        log.push(`error:${(err as Error).message}`);
        return error;
      },
      onCancel: () => log.push('cancel'),
    },
  };
}

describe('relayStream', () => {
  test('forwards everything and reports the end', async () => {
    const { log, handlers } = recorder();
    const stream = relayStream(enc.encode('data: 1\n\n'), scriptedReader(['data: 2\n', '\ndata: 3\n\n']), handlers, true);
    expect(await new Response(stream).text()).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\n');
    expect(log).toEqual(['end']);
  });

  test('a failure after the first byte ends with one error event in place of the torn event', async () => {
    const { log, handlers } = recorder();
    const stream = relayStream(enc.encode('data: 1\n\n'), scriptedReader(['data: {"tor'], new Error('reset')), handlers, true);
    const text = await new Response(stream).text();
    expect(text).toBe(
      `data: 1\n\ndata: {"error":{"message":"decode failed mid-stream","type":"server_error","code":"upstream_failed","param":null}}\n\n`,
    );
    expect(log).toEqual(['error:reset']);
  });

  test('a failure the handler declines to report just closes the stream', async () => {
    const { handlers } = recorder(null);
    const stream = relayStream(enc.encode('data: 1\n\n'), scriptedReader([], new Error('aborted')), handlers, true);
    expect(await new Response(stream).text()).toBe('data: 1\n\n');
  });

  test('a torn tail is flushed when D ends normally', async () => {
    const { handlers } = recorder();
    const stream = relayStream(enc.encode('data: 1\n\ndata: 2'), scriptedReader([]), handlers, true);
    expect(await new Response(stream).text()).toBe('data: 1\n\ndata: 2');
  });

  test('non-SSE bodies are forwarded chunk by chunk, untouched', async () => {
    const { handlers } = recorder();
    const reader = relayStream(enc.encode('{"a"'), scriptedReader([':1}']), handlers, false).getReader();
    expect(dec.decode((await reader.read()).value)).toBe('{"a"');
    expect(dec.decode((await reader.read()).value)).toBe(':1}');
    expect((await reader.read()).done).toBe(true);
  });

  test('a tail longer than the hold limit is forwarded rather than held', async () => {
    const { handlers } = recorder();
    const big = 'x'.repeat(MAX_HELD_BYTES + 1);
    const reader = relayStream(enc.encode(big), scriptedReader([]), handlers, true).getReader();
    expect((await reader.read()).value?.byteLength).toBe(MAX_HELD_BYTES + 1);
  });

  test('cancelling (the client left) cancels D’s body and reports it once', async () => {
    const { log, handlers } = recorder();
    const source = scriptedReader(['data: 2\n\n']);
    const stream = relayStream(enc.encode('data: 1\n\n'), source, handlers, true);
    const reader = stream.getReader();
    await reader.read();
    await reader.cancel('gone');
    expect(log).toEqual(['cancel']);
    expect(source.cancelled).toEqual(['gone']);
  });
});

describe('lastEventEnd', () => {
  test('finds the end of the last complete event, LF or CRLF', () => {
    expect(lastEventEnd(enc.encode('data: 1\n\ndata: 2'))).toBe(9);
    expect(lastEventEnd(enc.encode('data: 1\r\n\r\n'))).toBe(11);
    expect(lastEventEnd(enc.encode('data: 1\n'))).toBe(0);
    expect(lastEventEnd(enc.encode(''))).toBe(0);
  });
});
