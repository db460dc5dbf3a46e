import { afterEach, describe, expect, test } from 'bun:test';
import type { Socket, TCPSocketListener } from 'bun';
import { H1Client } from './h1-client.ts';
import { abortSourceOf, neverSent, type LegAnswer } from './platform.ts';

/** An answer's whole body as text. */
async function textOf(answer: LegAnswer): Promise<string> {
  if (!answer.hasBody) return '';
  const reader = answer.reader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    text += decoder.decode(value, { stream: true });
  }
}

const jsonOf = async (answer: LegAnswer): Promise<unknown> => JSON.parse(await textOf(answer));

/** A scripted engine: raw TCP, so every byte of each answer (and each close) is the test's own. */
interface Engine {
  readonly url: string;
  /** Connections opened so far. */
  readonly opened: number;
  /** Resolves when connection `n` (0-based) has closed. */
  closed(n: number): Promise<void>;
  /** Resolves with connection `n`'s bytes once they contain a whole request (head and its body). */
  request(n: number, index?: number): Promise<string>;
  stop(): void;
}

type Answer = (socket: Socket<{ id: number }>, request: string, id: number) => void;

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

/** Starts an engine that answers each complete request with `answer`. */
function engine(answer: Answer): Engine {
  const raw: Buffer[] = [];
  const consumed: number[] = [];
  const requests: string[][] = [];
  const closedWaiters = new Map<number, () => void>();
  const closedSet = new Set<number>();
  const requestWaiters: (() => void)[] = [];
  let opened = 0;
  const server: TCPSocketListener<{ id: number }> = Bun.listen<{ id: number }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { id: opened++ };
        raw[socket.data.id] = Buffer.alloc(0);
        consumed[socket.data.id] = 0;
        requests[socket.data.id] = [];
      },
      data(socket, chunk) {
        const id = socket.data.id;
        raw[id] = Buffer.concat([raw[id]!, chunk]);
        // Split off every complete request (head + content-length bytes) and answer each.
        for (;;) {
          const rest = raw[id]!.subarray(consumed[id]!);
          const headEnd = rest.indexOf('\r\n\r\n');
          if (headEnd < 0) return;
          const head = rest.subarray(0, headEnd + 4).toString('latin1');
          const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
          if (rest.byteLength < headEnd + 4 + length) return;
          consumed[id]! += headEnd + 4 + length;
          // The head as bytes (Latin-1), the body as UTF-8 text.
          const request = head + rest.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8');
          requests[id]!.push(request);
          for (const wake of requestWaiters.splice(0)) wake();
          answer(socket, request, id);
        }
      },
      close(socket) {
        closedSet.add(socket.data.id);
        closedWaiters.get(socket.data.id)?.();
      },
    },
  });
  const stop = () => server.stop(true);
  stops.push(stop);
  return {
    url: `http://127.0.0.1:${server.port}`,
    get opened() {
      return opened;
    },
    closed: (n) => (closedSet.has(n) ? Promise.resolve() : new Promise<void>((resolve) => closedWaiters.set(n, resolve))),
    request: async (n, index = 0) => {
      while (requests[n]?.[index] === undefined) await new Promise<void>((resolve) => requestWaiters.push(resolve));
      return requests[n]![index]!;
    },
    stop,
  };
}

const json = (body: string, extra = '') =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

describe('H1Client', () => {
  test('sends the POST as fetch would and reuses the kept-alive connection', async () => {
    const e = engine((socket) => socket.write(json('{"ok":true}')));
    const client = new H1Client();
    const headers = { 'content-type': 'application/json', 'x-request-id': 'r-1', via: '1.1 pdlink-ab' };
    const first = await client.post(`${e.url}/v1/completions?x=1`, headers, '{"prompt":"é"}');
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('application/json');
    expect(await jsonOf(first)).toEqual({ ok: true });
    const second = await client.post(`${e.url}/v1/completions`, headers, '{}');
    expect(await textOf(second)).toBe('{"ok":true}');
    expect(e.opened).toBe(1);
    const host = new URL(e.url).host;
    expect(await e.request(0, 0)).toBe(
      `POST /v1/completions?x=1 HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\nx-request-id: r-1\r\nvia: 1.1 pdlink-ab\r\ncontent-length: 15\r\n\r\n{"prompt":"é"}`,
    );
    expect((await e.request(0, 1)).endsWith('content-length: 2\r\n\r\n{}')).toBe(true);
    client.closeIdle();
    await e.closed(0);
  });

  test('streams a chunked answer as it arrives', async () => {
    let socketOf: Socket<{ id: number }> | undefined;
    const e = engine((socket) => {
      socketOf = socket;
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n');
    });
    const client = new H1Client();
    const res = await client.post(`${e.url}/v1/completions`, {}, '{}');
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.reader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: 1\n\n');
    socketOf!.write('9\r\ndata: 2\n\n\r\n0\r\n\r\n');
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: 2\n\n');
    expect((await reader.read()).done).toBe(true);
    // The connection went back to the pool: the next request uses it.
    const next = client.post(`${e.url}/v1/completions`, {}, '{}');
    await e.request(0, 1);
    socketOf!.write(json('{}'));
    expect((await next).status).toBe(200);
    expect(e.opened).toBe(1);
    client.closeIdle();
  });

  test('chunks that arrive before a read wait in order; headers read as a Headers reads them', async () => {
    const e = engine((socket) =>
      socket.write(
        'HTTP/1.1 200 OK\r\nX-Kv: a\r\nx-kv: b\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n' +
          '3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n',
      ),
    );
    const client = new H1Client();
    const res = await client.post(`${e.url}/a`, {}, '');
    expect(res.headers.get('X-KV')).toBe('a, b');
    expect(res.headers.get('Content-Type')).toBe('text/plain');
    expect(res.headers.get('missing')).toBeNull();
    // The whole answer has come (the connection is pooled again) before anything is read.
    while (client.idleConnections === 0) await new Promise((resolve) => setImmediate(resolve));
    const reader = res.reader();
    const decoder = new TextDecoder();
    // The chunks of one piece come as one: what is read, in order, is the body.
    let text = '';
    for (let read = await reader.read(); !read.done; read = await reader.read()) text += decoder.decode(read.value);
    expect(text).toBe('onetwo');
    expect((await reader.read()).done).toBe(true);
    client.closeIdle();
  });

  test('a body handed over: what waited first, in order, then each piece as it arrives, then the end', async () => {
    let socketOf: Socket<{ id: number }> | undefined;
    const e = engine((socket) => {
      socketOf = socket;
      socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\none\r\n');
    });
    const client = new H1Client();
    const res = await client.post(`${e.url}/a`, {}, '');
    const reader = res.reader();
    // One read first: a body may be read a while, then handed over.
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('one');
    socketOf!.write('3\r\ntwo\r\n');
    const log: string[] = [];
    let { promise: arrived, resolve } = Promise.withResolvers<void>();
    const sink = {
      chunk: (bytes: Uint8Array) => {
        log.push(new TextDecoder().decode(bytes));
        resolve();
      },
      end: () => {
        log.push('end');
        resolve();
      },
      fail: (err: unknown) => void log.push(`fail ${String(err)}`),
    };
    // 'two' may have come before the hand-over (then it is handed over at once) or after.
    reader.sinkTo!(sink);
    await arrived;
    expect(log).toEqual(['two']);
    ({ promise: arrived, resolve } = Promise.withResolvers<void>());
    socketOf!.write('5\r\nthree\r\n');
    await arrived;
    ({ promise: arrived, resolve } = Promise.withResolvers<void>());
    socketOf!.write('0\r\n\r\n');
    await arrived;
    expect(log).toEqual(['two', 'three', 'end']);
    client.closeIdle();
  });

  test('a body handed over after it ended or failed gets what waited, then the end or the failure', async () => {
    const whole = engine((socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nwhol'));
    const client = new H1Client();
    const res = await client.post(`${whole.url}/a`, {}, '');
    // The whole answer has come (the connection is pooled again) before it is handed over.
    while (client.idleConnections === 0) await new Promise((resolve) => setImmediate(resolve));
    const log: string[] = [];
    const sink = {
      chunk: (bytes: Uint8Array) => void log.push(new TextDecoder().decode(bytes)),
      end: () => void log.push('end'),
      fail: (err: unknown) => void log.push(`fail ${(err as Error).message}`),
    };
    res.reader().sinkTo!(sink);
    expect(log).toEqual(['whol', 'end']);
    client.closeIdle();

    const cut = engine((socket) => socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n'));
    const controller = new AbortController();
    const broken = await new H1Client().post(`${cut.url}/a`, {}, '', abortSourceOf(controller.signal));
    controller.abort(new Error('stop'));
    broken.reader().sinkTo!(sink);
    // As a stream that errors: what was not read is dropped, and the failure is all that comes.
    expect(log.slice(2)).toEqual(['fail stop']);
    await cut.closed(0);
  });

  test('a body handed over and then cancelled hands over nothing more and closes its connection', async () => {
    let socketOf: Socket<{ id: number }> | undefined;
    const e = engine((socket) => {
      socketOf = socket;
      socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n');
    });
    const res = await new H1Client().post(`${e.url}/a`, {}, '');
    const log: string[] = [];
    const reader = res.reader();
    reader.sinkTo!({ chunk: () => void log.push('chunk'), end: () => void log.push('end'), fail: () => void log.push('fail') });
    await reader.cancel();
    socketOf!.write('1\r\na\r\n');
    await e.closed(0);
    expect(log).toEqual([]);
  });

  test('an answer with Connection: close is not reused; the next request opens another connection', async () => {
    const e = engine((socket) => {
      socket.write(json('{}', 'connection: close\r\n'));
      socket.end();
    });
    const client = new H1Client();
    await textOf(await client.post(`${e.url}/a`, {}, ''));
    await textOf(await client.post(`${e.url}/a`, {}, ''));
    expect(e.opened).toBe(2);
  });

  test('an answer framed by the close is read to the end', async () => {
    const e = engine((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil ');
      socket.end('the close');
    });
    const res = await new H1Client().post(`${e.url}/a`, {}, '');
    expect(await textOf(res)).toBe('until the close');
  });

  test('a pooled connection the engine closed while idle leaves the pool; the next request opens another', async () => {
    let first: Socket<{ id: number }> | undefined;
    const e = engine((socket, _request, id) => {
      if (id === 0) first = socket;
      socket.write(json(`{"conn":${id}}`));
    });
    const client = new H1Client();
    expect(await jsonOf(await client.post(`${e.url}/a`, {}, ''))).toEqual({ conn: 0 });
    expect(client.idleConnections).toBe(1);
    first!.end();
    await e.closed(0);
    // The client learns of the close on one of its next turns of the event loop.
    while (client.idleConnections > 0) await new Promise((resolve) => setImmediate(resolve));
    expect(await jsonOf(await client.post(`${e.url}/a`, {}, ''))).toEqual({ conn: 1 });
    client.closeIdle();
    expect(client.idleConnections).toBe(0);
  });

  test('a request the engine closes its pooled connection under fails with ECONNRESET, and is not sent again', async () => {
    const e = engine((socket, request) => {
      if (request.includes('second')) socket.end();
      else socket.write(json('{}'));
    });
    const client = new H1Client();
    await textOf(await client.post(`${e.url}/a`, {}, 'first'));
    const err = await client.post(`${e.url}/a`, {}, 'second').catch((caught: unknown) => caught);
    expect((err as { code?: string }).code).toBe('ECONNRESET');
    // It may have reached the engine: nothing says it never left.
    expect(neverSent(err)).toBe(false);
    expect(e.opened).toBe(1);
  });

  test('a connection that cannot be made is marked: the request never left', async () => {
    const e = engine(() => {});
    const url = e.url;
    e.stop();
    const err = await new H1Client().post(`${url}/a`, {}, '').catch((caught: unknown) => caught);
    expect(neverSent(err)).toBe(true);
  });

  test('a connection closed before the answer fails with ECONNRESET', async () => {
    const e = engine((socket) => socket.end());
    const err = await new H1Client().post(`${e.url}/a`, {}, '').catch((caught: unknown) => caught);
    expect((err as { code?: string }).code).toBe('ECONNRESET');
    expect((err as Error).message).toMatch(/before answering/);
  });

  test('a connection closed in the middle of a framed body errors the body with ECONNRESET', async () => {
    const e = engine((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial');
      socket.end();
    });
    const res = await new H1Client().post(`${e.url}/a`, {}, '');
    const err = await textOf(res).catch((caught: unknown) => caught);
    expect((err as { code?: string }).code).toBe('ECONNRESET');
    expect((err as Error).message).toMatch(/before its answer was complete/);
  });

  test('a refused connection fails with ECONNREFUSED, as fetch does', async () => {
    const e = engine(() => {});
    const url = e.url;
    e.stop();
    const err = await new H1Client().post(`${url}/a`, {}, '').catch((caught: unknown) => caught);
    expect((err as { code?: string }).code).toBe('ECONNREFUSED');
  });

  test('an answer it cannot frame fails with HPE_INVALID and its connection is closed', async () => {
    const e = engine((socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: nope\r\n\r\n'));
    const err = await new H1Client().post(`${e.url}/a`, {}, '').catch((caught: unknown) => caught);
    expect((err as { code?: string }).code).toBe('HPE_INVALID');
    await e.closed(0);
  });

  test('a control character in a header value fails the request as malformed', async () => {
    const e = engine((socket) => socket.write('HTTP/1.1 200 OK\r\nx-bad: a\u0000b\r\ncontent-length: 0\r\n\r\n'));
    const err = await new H1Client().post(`${e.url}/a`, {}, '').catch((caught: unknown) => caught);
    expect((err as { code?: string }).code).toBe('HPE_INVALID');
    await e.closed(0);
  });

  test('a status beyond 599 is malformed', async () => {
    const e = engine((socket) => socket.write('HTTP/1.1 600 Odd\r\ncontent-length: 0\r\n\r\n'));
    const err = await new H1Client().post(`${e.url}/a`, {}, '').catch((caught: unknown) => caught);
    expect((err as Error).message).toMatch(/status 600/);
  });

  test('bytes after the end of an answer, in the same piece, retire the connection once the answer is read', async () => {
    const e = engine((socket) => socket.write(json('{}') + 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'));
    const client = new H1Client();
    expect(await textOf(await client.post(`${e.url}/a`, {}, ''))).toBe('{}');
    await e.closed(0);
    expect(client.idleConnections).toBe(0);
    expect(await textOf(await client.post(`${e.url}/a`, {}, ''))).toBe('{}');
    expect(e.opened).toBe(2);
    client.closeIdle();
  });

  test('bytes on an idle pooled connection retire it', async () => {
    let first: Socket<{ id: number }> | undefined;
    const e = engine((socket, _request, id) => {
      if (id === 0) first = socket;
      socket.write(json('{}'));
    });
    const client = new H1Client();
    await textOf(await client.post(`${e.url}/a`, {}, ''));
    first!.write('HTTP/1.1 200 OK\r\n\r\n');
    await e.closed(0);
    await textOf(await client.post(`${e.url}/a`, {}, ''));
    expect(e.opened).toBe(2);
    client.closeIdle();
  });

  test('an abort before the answer rejects with the reason and closes the connection', async () => {
    const e = engine(() => {});
    const controller = new AbortController();
    const pending = new H1Client().post(`${e.url}/a`, {}, 'x', abortSourceOf(controller.signal));
    await e.request(0);
    const reason = new Error('client went away');
    controller.abort(reason);
    expect(await pending.catch((caught: unknown) => caught)).toBe(reason);
    await e.closed(0);
  });

  test('an abort during the body errors the body with the reason', async () => {
    const e = engine((socket) => socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n'));
    const controller = new AbortController();
    const res = await new H1Client().post(`${e.url}/a`, {}, '', abortSourceOf(controller.signal));
    const reader = res.reader();
    await reader.read();
    const reason = new Error('stop');
    controller.abort(reason);
    expect(await reader.read().catch((caught: unknown) => caught)).toBe(reason);
    await e.closed(0);
  });

  test('an exchange listens to its abort only while it runs', async () => {
    const listeners = new Set<() => void>();
    const abort = {
      aborted: false,
      reason: undefined,
      add: (listener: () => void) => void listeners.add(listener),
      remove: (listener: () => void) => void listeners.delete(listener),
      signal: new AbortController().signal,
    };
    let answer: Socket<{ id: number }> | undefined;
    const e = engine((socket) => {
      answer = socket;
      socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n');
    });
    const client = new H1Client();
    const res = await client.post(`${e.url}/a`, {}, '', abort);
    expect(listeners.size).toBe(1);
    answer!.write('0\r\n\r\n');
    expect(await textOf(res)).toBe('a');
    expect(listeners.size).toBe(0);
    client.closeIdle();
  });

  test('an already aborted signal rejects at once without connecting', async () => {
    const e = engine(() => {});
    const reason = new Error('gone');
    const err = await new H1Client()
      .post(`${e.url}/a`, {}, '', abortSourceOf(AbortSignal.abort(reason)))
      .catch((caught: unknown) => caught);
    expect(err).toBe(reason);
    expect(e.opened).toBe(0);
  });

  test('a body the reader cancels closes its connection, and the next request opens another', async () => {
    const e = engine((socket) => socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n'));
    const client = new H1Client();
    const res = await client.post(`${e.url}/a`, {}, '');
    await res.reader().cancel();
    await e.closed(0);
    const again = client.post(`${e.url}/a`, {}, '');
    await e.request(1);
    expect((await again).status).toBe(200);
    expect(e.opened).toBe(2);
  });

  test('a body larger than the socket takes at once is written whole, ASCII or not, with a Latin-1 header or not', async () => {
    const e = engine((socket, request) => {
      const body = request.slice(request.indexOf('\r\n\r\n') + 4);
      socket.write(json(JSON.stringify({ bytes: Buffer.byteLength(body), tail: body.slice(-3) })));
    });
    const client = new H1Client();
    const cases: [string, Record<string, string>][] = [
      ['z'.repeat(12 << 20), {}],
      [`${'é'.repeat(6 << 20)}end`, {}],
      [`${'é'.repeat(6 << 20)}end`, { 'x-name': 'Zoë' }],
    ];
    for (const [body, headers] of cases) {
      const res = await client.post(`${e.url}/a`, headers, body);
      expect(await jsonOf(res)).toEqual({ bytes: Buffer.byteLength(body), tail: body.slice(-3) });
    }
    client.closeIdle();
  });

  test('a Latin-1 header value goes out byte for byte, as fetch sends it', async () => {
    const e = engine((socket) => socket.write(json('{}')));
    const client = new H1Client();
    await textOf(await client.post(`${e.url}/a`, { 'x-name': 'Zoë' }, ''));
    // The engine reads the head as Latin-1: one byte 0xEB reads as 'ë' (its two UTF-8 bytes would read as 'Ã«').
    expect(await e.request(0)).toContain('x-name: Zoë\r\n');
    client.closeIdle();
  });

  test('more idle connections than the pool keeps are closed', async () => {
    const e = engine((socket) => socket.write(json('{}')));
    const client = new H1Client({ maxIdlePerOrigin: 1 });
    const [a, b] = await Promise.all([client.post(`${e.url}/a`, {}, ''), client.post(`${e.url}/a`, {}, '')]);
    await Promise.all([textOf(a), textOf(b)]);
    expect(e.opened).toBe(2);
    // One of the two is kept, the other closed.
    await Promise.race([e.closed(0), e.closed(1)]);
    client.closeIdle();
    await Promise.all([e.closed(0), e.closed(1)]);
  });

  test('idle connections over every origin are capped: past the cap the one idle longest is closed', async () => {
    const engines = [0, 1, 2].map(() => engine((socket) => socket.write(json('{}'))));
    const client = new H1Client({ maxIdle: 2 });
    for (const e of engines) await textOf(await client.post(`${e.url}/a`, {}, ''));
    // The third idle connection pushed out the first, idle longest; the other two are kept.
    await engines[0]!.closed(0);
    expect(client.idleConnections).toBe(2);
    await textOf(await client.post(`${engines[1]!.url}/a`, {}, ''));
    expect(engines[1]!.opened).toBe(1);
    // A lower cap closes what it no longer keeps; 0 keeps nothing.
    client.limitIdle(0);
    expect(client.idleConnections).toBe(0);
    await textOf(await client.post(`${engines[2]!.url}/a`, {}, ''));
    expect(client.idleConnections).toBe(0);
    await Promise.all([engines[1]!.closed(0), engines[2]!.closed(0), engines[2]!.closed(1)]);
  });

  test('an answer that comes before the request was all written leaves its connection unused again', async () => {
    // The engine answers as soon as the first bytes arrive, without reading the body (the rest of
    // the request would be read as the next request on that connection).
    const server = Bun.listen<{ answered: boolean }>({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        open(socket) {
          socket.data = { answered: false };
        },
        data(socket) {
          if (socket.data.answered) return;
          socket.data.answered = true;
          socket.write(json('{"early":true}'));
        },
      },
    });
    stops.push(() => server.stop(true));
    const client = new H1Client();
    const res = await client.post(`http://127.0.0.1:${server.port}/a`, {}, 'x'.repeat(32 << 20));
    expect(await jsonOf(res)).toEqual({ early: true });
    expect(client.idleConnections).toBe(0);
  });

  test('a pooled connection unused for idleSeconds is closed', async () => {
    const e = engine((socket) => socket.write(json('{}')));
    const client = new H1Client({ idleSeconds: 1 });
    await textOf(await client.post(`${e.url}/a`, {}, ''));
    await e.closed(0);
  });

  test('refuses what fetch refuses, and the framing headers it writes itself', async () => {
    const client = new H1Client();
    const refused = async (url: string, headers: Record<string, string>) =>
      client.post(url, headers, '').then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(await refused('http://127.0.0.1:1/a', { 'x-a': 'b\r\nx-injected: 1' })).toBeInstanceOf(TypeError);
    expect(await refused('http://127.0.0.1:1/a', { 'bad name': 'x' })).toBeInstanceOf(TypeError);
    expect(await refused('http://127.0.0.1:1/a', { 'x-a': 'snow ☃' })).toBeInstanceOf(TypeError);
    expect(await refused('http://127.0.0.1:1/a', { Host: 'elsewhere' })).toBeInstanceOf(TypeError);
    expect(await refused('http://127.0.0.1:1/a', { 'content-length': '0' })).toBeInstanceOf(TypeError);
    expect(await refused('https://127.0.0.1:1/a', {})).toBeInstanceOf(TypeError);
  });

  test('pooled connections do not keep the process alive', async () => {
    const e = engine((socket) => socket.write(json('{}')));
    const script = `import { H1Client } from ${JSON.stringify(new URL('./h1-client.ts', import.meta.url).pathname)};
      const res = await new H1Client().post(${JSON.stringify(`${e.url}/a`)}, {}, '');
      const reader = res.reader();
      let text = '';
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
      console.log(text);`;
    const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'inherit' });
    expect(await child.exited).toBe(0);
    expect(await new Response(child.stdout).text()).toBe('{}\n');
  });
});
