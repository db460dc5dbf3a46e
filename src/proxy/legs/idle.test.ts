import { afterEach, describe, expect, test } from 'bun:test';
import type { Socket } from 'bun';
import { AbortScope } from './abort-scope.ts';
import { Deadlines } from './deadlines.ts';
import { ENGINE_IDLE_CODE, legReader, readLegBytes, readLegText, withIdleTimeout } from './idle.ts';
import { UnusableAnswer } from './unusable-answer.ts';
import { H1Client } from '../../platform/h1-client.ts';
import { rawEngine, type RawEngine } from '../../../test/doubles/raw-engine.ts';
import { answerOf, type AbortSource, type LegAnswer } from '../../platform/platform.ts';

/**
 * A response whose body chunks the test pushes, and the signal the send saw. Like fetch, an abort
 * of that signal errors the body with the abort's reason.
 */
function controlled() {
  let push!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (push = c) });
  let seen: AbortSource | undefined;
  const send = async (abort: AbortSource) => {
    seen = abort;
    abort.add(() => push.error(abort.reason));
    return answerOf(new Response(body, { status: 200 }));
  };
  return { send, push: () => push, signal: () => seen };
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

/** Deadlines on a clock the test sets, counting how often one was armed. */
class CountedDeadlines extends Deadlines {
  armed = 0;
  override arm(ms: number, fire: () => void) {
    this.armed++;
    return super.arm(ms, fire);
  }
}

describe('withIdleTimeout', () => {
  test('no head within the timeout: the send is aborted and fails with ETIMEDOUT naming the setting', async () => {
    let seen: AbortSource | undefined;
    const send = (abort: AbortSource) =>
      new Promise<LegAnswer>((_, reject) => {
        seen = abort;
        abort.add(() => reject(new Error('aborted')));
      });
    const deadlines = new Deadlines();
    const err = await rejection(withIdleTimeout(send, new AbortController().signal, 20, deadlines));
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(err.message).toContain('http_timeout_seconds');
    expect(seen?.aborted).toBe(true);
    expect(deadlines.size).toBe(0);
  });

  test('chunks keep it alive; silence after a chunk fails the body read', async () => {
    const c = controlled();
    const deadlines = new Deadlines();
    const res = await withIdleTimeout(c.send, new AbortController().signal, 30, deadlines);
    const reader = legReader(res)!;
    c.push().enqueue(new Uint8Array([1]));
    expect((await reader.read()).value).toEqual(new Uint8Array([1]));
    const err = await rejection(reader.read());
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(c.signal()?.aborted).toBe(true);
    expect(deadlines.size).toBe(0);
  });

  test('a chunk moves the deadline: the clock, when it comes early, sets itself for the rest of the silence', async () => {
    let now = 0;
    const deadlines = new CountedDeadlines(() => now);
    const c = controlled();
    const res = await withIdleTimeout(c.send, new AbortController().signal, 50, deadlines);
    const reader = legReader(res)!;
    now = 40;
    c.push().enqueue(new Uint8Array([1]));
    await reader.read();
    // Due at 50: the engine has been silent for 20 of them, so the leg goes on.
    now = 60;
    const failed = rejection(reader.read());
    for (let i = 0; i < 400 && deadlines.armed < 2; i++) await Bun.sleep(5);
    expect(deadlines.armed).toBe(2);
    expect(c.signal()?.aborted).toBe(false);
    now = 100;
    expect((await failed).code).toBe(ENGINE_IDLE_CODE);
    expect(deadlines.size).toBe(0);
  });

  test('a body that ends in time is read whole and leaves nothing armed', async () => {
    const c = controlled();
    const deadlines = new Deadlines();
    const res = await withIdleTimeout(c.send, new AbortController().signal, 60_000, deadlines);
    c.push().enqueue(new TextEncoder().encode('do'));
    c.push().enqueue(new TextEncoder().encode('ne'));
    c.push().close();
    expect(await readLegText(res, 1 << 20)).toBe('done');
    expect(c.signal()?.aborted).toBe(false);
    expect(deadlines.size).toBe(0);
  });

  test('a reader cancelled by its consumer leaves nothing armed', async () => {
    const c = controlled();
    const deadlines = new Deadlines();
    const res = await withIdleTimeout(c.send, new AbortController().signal, 60_000, deadlines);
    await legReader(res)!.cancel('client left');
    expect(deadlines.size).toBe(0);
  });

  test('the caller’s abort reaches the send and disarms the clock; Infinity sends as it is', async () => {
    const parent = new AbortController();
    const c = controlled();
    const deadlines = new Deadlines();
    const res = await withIdleTimeout(c.send, parent.signal, 60_000, deadlines);
    parent.abort('client_abort');
    expect(c.signal()?.reason).toBe('client_abort');
    expect(deadlines.size).toBe(0);
    expect(await rejection(legReader(res)!.read())).toBe('client_abort' as never);
    // With no idle timeout the send gets the caller's own abort: the signal itself, or the scope itself.
    const plain = controlled();
    await withIdleTimeout(plain.send, parent.signal, Infinity);
    expect(plain.signal()!.signal).toBe(parent.signal);
    const scope = new AbortScope();
    const scoped = controlled();
    await withIdleTimeout(scoped.send, scope, Infinity);
    expect(scoped.signal()).toBe(scope);
  });
});

/**
 * The idle clock over the socket client, whose answers tell the clock of each chunk as it arrives
 * (LegAnswer.watched) instead of through a reader in between. Engines are raw TCP, so the test
 * decides every byte and every silence.
 */
const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

function engine(answer: (socket: Socket<undefined>) => void): RawEngine {
  const started = rawEngine(answer);
  stops.push(started.stop);
  return started;
}

const HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';

/** A POST to `e` over a socket client of its own, its leg under an idle clock of `idleMs` on a deadline set of its own. */
async function postWatched(e: RawEngine, idleMs: number, signal: AbortSignal = new AbortController().signal) {
  const deadlines = new Deadlines();
  const client = new H1Client();
  const res = await withIdleTimeout((abort) => client.post(e.url, {}, '', abort), signal, idleMs, deadlines);
  return { client, deadlines, res };
}

describe('withIdleTimeout over the socket client', () => {
  test('silence after a chunk fails the body read with ETIMEDOUT and closes the connection', async () => {
    const e = engine((socket) => socket.write(`${HEAD}1\r\na\r\n`));
    const { deadlines, res } = await postWatched(e, 30);
    const reader = legReader(res)!;
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('a');
    const err = await rejection(reader.read());
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(deadlines.size).toBe(0);
    await e.closed;
  });

  test('a body that ends is read whole and leaves nothing armed', async () => {
    const e = engine((socket) => socket.write(`${HEAD}2\r\ndo\r\n2\r\nne\r\n0\r\n\r\n`));
    const { client, deadlines, res } = await postWatched(e, 60_000);
    expect(await readLegText(res, 1 << 20)).toBe('done');
    expect(deadlines.size).toBe(0);
    client.closeIdle();
  });

  test('a whole body read fails with ETIMEDOUT when the engine falls silent mid-body', async () => {
    const e = engine((socket) => socket.write(`${HEAD}2\r\ndo\r\n`));
    const { deadlines, res } = await postWatched(e, 30);
    const err = await rejection(readLegText(res, 1 << 20));
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(deadlines.size).toBe(0);
    await e.closed;
  });

  test('a whole body taken after the silence ended the leg reads as ETIMEDOUT', async () => {
    const e = engine((socket) => socket.write(HEAD));
    const { deadlines, res } = await postWatched(e, 20);
    await e.closed;
    expect((await rejection(readLegText(res, 1 << 20))).code).toBe(ENGINE_IDLE_CODE);
    expect(deadlines.size).toBe(0);
  });

  test('a silence that ends the leg before its body is taken still reads as ETIMEDOUT', async () => {
    const e = engine((socket) => socket.write(HEAD));
    const { deadlines, res } = await postWatched(e, 20);
    // Nobody reads until the engine's silence has ended the leg (its connection closes then).
    await e.closed;
    const err = await rejection(legReader(res)!.read());
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(deadlines.size).toBe(0);
  });

  test('the caller’s abort mid-body fails the read with its reason and disarms the clock', async () => {
    const e = engine((socket) => socket.write(`${HEAD}1\r\na\r\n`));
    const parent = new AbortController();
    const { deadlines, res } = await postWatched(e, 60_000, parent.signal);
    const reader = legReader(res)!;
    await reader.read();
    parent.abort('client_abort');
    expect(await rejection(reader.read())).toBe('client_abort' as never);
    expect(deadlines.size).toBe(0);
    await e.closed;
  });

  test('a reader that gives up disarms the clock and closes the connection', async () => {
    const e = engine((socket) => socket.write(`${HEAD}1\r\na\r\n`));
    const { deadlines, res } = await postWatched(e, 60_000);
    await legReader(res)!.cancel('client left');
    expect(deadlines.size).toBe(0);
    await e.closed;
  });
});

describe('a whole body is bounded', () => {
  for (const client of ['sockets', 'fetch'] as const) {
    test(`an endless answer fails as soon as it passes the bound, and its connection closes (${client})`, async () => {
      // One 64 KiB chunk after another for as long as the connection stays open.
      const chunk = `10000\r\n${'x'.repeat(0x10000)}\r\n`;
      let writing = true;
      const e = engine((socket) => {
        socket.write(HEAD);
        const more = (): void => {
          while (writing && socket.write(chunk) === chunk.length);
        };
        more();
        const timer = setInterval(more, 1);
        void e.closed.then(() => {
          writing = false;
          clearInterval(timer);
        });
      });
      const sockets = new H1Client();
      const res = client === 'sockets' ? await sockets.post(e.url, {}, '') : answerOf(await fetch(e.url, { method: 'POST', body: '' }));
      const err = await rejection(readLegBytes(res, 1 << 20));
      expect(err).toBeInstanceOf(UnusableAnswer);
      expect(err.message).toBe('answered more than 1048576 bytes (pdlink.proxy.max_answer_bytes)');
      await e.closed;
    });
  }

  test('an answer within the bound is read whole', async () => {
    const e = engine((socket) => socket.write(`${HEAD}3\r\nabc\r\n0\r\n\r\n`));
    const client = new H1Client();
    expect(await readLegText(await client.post(e.url, {}, ''), 3)).toBe('abc');
    const again = engine((socket) => socket.write(`${HEAD}3\r\nabc\r\n0\r\n\r\n`));
    expect(await rejection(readLegText(await client.post(again.url, {}, ''), 2))).toBeInstanceOf(UnusableAnswer);
    client.closeIdle();
  });
});

describe('a body held for a slow reader is not the engine being silent', () => {
  test('held past the idle timeout the leg goes on; resumed, a silence fails it again', async () => {
    let now = 0;
    const deadlines = new CountedDeadlines(() => now);
    const e = engine((socket) => socket.write(`${HEAD}1\r\na\r\n`));
    const client = new H1Client();
    const res = await withIdleTimeout((abort) => client.post(e.url, {}, '', abort), new AbortController().signal, 50, deadlines);
    const reader = legReader(res)!;
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('a');
    reader.pause!();
    now = 1_000;
    // The deadline comes and finds the body held: it sets itself again instead of failing the leg.
    const before = deadlines.armed;
    for (let i = 0; i < 400 && deadlines.armed === before; i++) await Bun.sleep(5);
    expect(deadlines.armed).toBeGreaterThan(before);
    expect(deadlines.size).toBe(1);
    reader.resume!();
    const failed = rejection(reader.read());
    now = 1_100;
    expect((await failed).code).toBe(ENGINE_IDLE_CODE);
    expect(deadlines.size).toBe(0);
  });
});
