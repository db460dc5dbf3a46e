import { afterEach, describe, expect, test } from 'bun:test';
import type { Socket } from 'bun';
import { errors, type PdlinkError } from '../../core/errors.ts';
import { TURN_BYTES } from '../../core/turns.ts';
import { H1Client } from '../../platform/h1-client.ts';
import { rawEngine } from '../../../test/doubles/raw-engine.ts';
import type { BodySink } from '../../platform/platform.ts';
import { AbortScope } from '../legs/abort-scope.ts';
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

/**
 * A reader that hands `chunks` over as they arrive (as the socket client's does), each a turn of
 * the microtask queue after the last, then the end or `failure`; with `manual`, only what the test
 * hands to `sink()` itself. Reads are not expected.
 */
function handedReader(chunks: string[], failure?: Error, manual = false): ChunkReader & { cancelled: unknown[]; sink(): BodySink } {
  const queue = chunks.map((c) => enc.encode(c));
  const cancelled: unknown[] = [];
  let target: BodySink | undefined;
  return {
    cancelled,
    sink: () => target!,
    read: () => Promise.reject(new Error('a handed-over body is not read')),
    cancel: async (reason) => {
      cancelled.push(reason);
      target = undefined;
    },
    sinkTo(sink) {
      target = sink;
      if (manual) return;
      void (async () => {
        for (const chunk of queue) {
          await Promise.resolve();
          target?.chunk(chunk);
        }
        await Promise.resolve();
        if (failure !== undefined) target?.fail(failure);
        else target?.end();
      })();
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

describe.each([
  ['read chunk by chunk', scriptedReader],
  ['handed over as they arrive', handedReader],
] as const)('relayStream, a body %s', (_, scriptedReader) => {
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

  test('a stream that ends in the middle of an event fails: the torn tail is dropped for the error event', async () => {
    const { log, handlers } = recorder();
    const stream = relayStream(enc.encode('data: 1\n\ndata: 2'), scriptedReader([]), handlers, true);
    const text = await new Response(stream).text();
    expect(text).toStartWith('data: 1\n\ndata: {"error":');
    expect(text).toContain('decode failed mid-stream');
    expect(log).toEqual(['error:the stream ended in the middle of an event']);
  });

  test('line ends left after the last event are not a torn event', async () => {
    const { log, handlers } = recorder();
    const stream = relayStream(enc.encode('data: 1\n\n'), scriptedReader(['\r\n']), handlers, true);
    expect(await new Response(stream).text()).toBe('data: 1\n\n\r\n');
    expect(log).toEqual(['end']);
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

describe('relayStream, a body read chunk by chunk', () => {
  test('reads that find data waiting give the event loop a turn after every TURN_BYTES', async () => {
    const event = `data: ${'x'.repeat(64 * 1024 - 8)}\n\n`;
    const chunks = Array.from({ length: (3 * TURN_BYTES) / event.length }, () => event);
    const { log, handlers } = recorder();
    const stream = relayStream(new Uint8Array(0), scriptedReader(chunks), handlers, true);
    const reader = stream.getReader();
    let turns = 0;
    let bytes = 0;
    let counting = true;
    const count = (): void => {
      turns += 1;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
    }
    counting = false;
    expect(bytes).toBe(3 * TURN_BYTES);
    expect(log).toEqual(['end']);
    // The reads alone resolve in microtasks: only the relay's own yields let the loop turn.
    expect(turns).toBeGreaterThanOrEqual(2);
  });
});

describe('relayStream, a body handed over as it arrives', () => {
  test('what comes after the end or a failure is ignored', async () => {
    const { log, handlers } = recorder();
    const source = handedReader(['data: 2\n\n']);
    const text = await new Response(relayStream(enc.encode('data: 1\n\n'), source, handlers, true)).text();
    source.sink().chunk(enc.encode('data: late\n\n'));
    source.sink().fail(new Error('late'));
    source.sink().end();
    expect(text).toBe('data: 1\n\ndata: 2\n\n');
    expect(log).toEqual(['end']);
  });

  test('a handler that throws fails the client’s stream, not the caller handing the body over', async () => {
    const source = handedReader([], undefined, true);
    const handlers = {
      onEnd: () => {
        throw new Error('bookkeeping broke');
      },
      onError: () => null,
      onCancel: () => {},
    };
    const reader = relayStream(enc.encode('data: 1\n\n'), source, handlers, true).getReader();
    // The body is handed over once the client's body is first read.
    expect(dec.decode((await reader.read()).value)).toBe('data: 1\n\n');
    source.sink().chunk(enc.encode('data: 2\n\n'));
    expect(() => source.sink().end()).not.toThrow();
    // As a pull that threw would: the stream errors (a bug in the bookkeeping is not hidden).
    const rest = async () => {
      while (!(await reader.read()).done);
    };
    await expect(rest()).rejects.toThrow('bookkeeping broke');
  });

  test('a chunk the relay cannot forward errors the client’s stream', async () => {
    const source = handedReader([], undefined, true);
    const stream = relayStream(enc.encode('data: 1\n\n'), source, recorder().handlers, true);
    const reader = stream.getReader();
    await reader.read();
    // A chunk that is not bytes makes the SSE scan throw inside the relay, not in the source.
    expect(() => source.sink().chunk(null as never)).not.toThrow();
    await expect(reader.read()).rejects.toBeInstanceOf(TypeError);
  });
});

describe('relayStream over the socket client', () => {
  const stops: (() => void)[] = [];
  afterEach(() => {
    for (const stop of stops.splice(0)) stop();
  });

  /** A raw engine that answers each request with `answer`. */
  function engine(answer: (socket: Socket<undefined>) => void): string {
    const started = rawEngine(answer);
    stops.push(started.stop);
    return started.url;
  }

  const HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';

  test('relays every event and reports the end once the body is whole', async () => {
    const url = engine((socket) => socket.write(`${HEAD}9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n`));
    const client = new H1Client();
    const res = await client.post(url, {}, '', new AbortScope());
    const reader = res.reader();
    const first = (await reader.read()).value!;
    const { log, handlers } = recorder();
    expect(await new Response(relayStream(first, reader, handlers, true)).text()).toBe('data: 1\n\ndata: 2\n\n');
    expect(log).toEqual(['end']);
    client.closeIdle();
  });

  test('a connection lost mid-stream ends the client’s stream with the error event', async () => {
    const url = engine((socket) => {
      socket.write(`${HEAD}9\r\ndata: 1\n\n\r\n5\r\ndata:\r\n`);
      socket.end();
    });
    const client = new H1Client();
    const res = await client.post(url, {}, '', new AbortScope());
    const reader = res.reader();
    const first = (await reader.read()).value!;
    const { log, handlers } = recorder();
    const text = await new Response(relayStream(first, reader, handlers, true)).text();
    expect(text).toBe(
      `data: 1\n\ndata: {"error":{"message":"decode failed mid-stream","type":"server_error","code":"upstream_failed","param":null}}\n\n`,
    );
    expect(log).toHaveLength(1);
    expect(log[0]).toStartWith('error:');
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
