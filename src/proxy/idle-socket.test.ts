import { afterEach, describe, expect, test } from 'bun:test';
import type { Socket } from 'bun';
import { Deadlines } from './deadlines.ts';
import { ENGINE_IDLE_CODE, legReader, readLegText, withIdleTimeout } from './idle.ts';
import { H1Client } from '../runtime/h1-client.ts';

/**
 * The idle clock over the socket client, whose answers tell the clock of each chunk as it arrives
 * (LegAnswer.watched) instead of through a reader in between. Engines are raw TCP, so the test
 * decides every byte and every silence.
 */
const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

function engine(answer: (socket: Socket<undefined>) => void): { url: string; closed: Promise<void> } {
  let closed!: () => void;
  const done = new Promise<void>((resolve) => (closed = resolve));
  const server = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket) {
        answer(socket);
      },
      close() {
        closed();
      },
    },
  });
  stops.push(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}/v1/completions`, closed: done };
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

const HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';

describe('withIdleTimeout over the socket client', () => {
  test('silence after a chunk fails the body read with ETIMEDOUT and closes the connection', async () => {
    const e = engine((socket) => socket.write(`${HEAD}1\r\na\r\n`));
    const deadlines = new Deadlines();
    const client = new H1Client();
    const res = await withIdleTimeout((abort) => client.post(e.url, {}, '', abort), new AbortController().signal, 30, deadlines);
    const reader = legReader(res)!;
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('a');
    const err = await rejection(reader.read());
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(deadlines.size).toBe(0);
    await e.closed;
  });

  test('a body that ends is read whole and leaves nothing armed', async () => {
    const e = engine((socket) => socket.write(`${HEAD}2\r\ndo\r\n2\r\nne\r\n0\r\n\r\n`));
    const deadlines = new Deadlines();
    const client = new H1Client();
    const res = await withIdleTimeout((abort) => client.post(e.url, {}, '', abort), new AbortController().signal, 60_000, deadlines);
    expect(await readLegText(res)).toBe('done');
    expect(deadlines.size).toBe(0);
    client.closeIdle();
  });

  test('a silence that ends the leg before its body is taken still reads as ETIMEDOUT', async () => {
    const e = engine((socket) => socket.write(HEAD));
    const deadlines = new Deadlines();
    const client = new H1Client();
    const res = await withIdleTimeout((abort) => client.post(e.url, {}, '', abort), new AbortController().signal, 20, deadlines);
    // Nobody reads until the engine's silence has ended the leg (its connection closes then).
    await e.closed;
    const err = await rejection(legReader(res)!.read());
    expect(err.code).toBe(ENGINE_IDLE_CODE);
    expect(deadlines.size).toBe(0);
  });

  test('the caller’s abort mid-body fails the read with its reason and disarms the clock', async () => {
    const e = engine((socket) => socket.write(`${HEAD}1\r\na\r\n`));
    const deadlines = new Deadlines();
    const parent = new AbortController();
    const client = new H1Client();
    const res = await withIdleTimeout((abort) => client.post(e.url, {}, '', abort), parent.signal, 60_000, deadlines);
    const reader = legReader(res)!;
    await reader.read();
    parent.abort('client_abort');
    expect(await rejection(reader.read())).toBe('client_abort' as never);
    expect(deadlines.size).toBe(0);
    await e.closed;
  });

  test('a reader that gives up disarms the clock and closes the connection', async () => {
    const e = engine((socket) => socket.write(`${HEAD}1\r\na\r\n`));
    const deadlines = new Deadlines();
    const client = new H1Client();
    const res = await withIdleTimeout((abort) => client.post(e.url, {}, '', abort), new AbortController().signal, 60_000, deadlines);
    await legReader(res)!.cancel('client left');
    expect(deadlines.size).toBe(0);
    await e.closed;
  });
});
