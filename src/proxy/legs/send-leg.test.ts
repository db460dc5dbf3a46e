import { afterEach, describe, expect, test } from 'bun:test';
import type { Socket, TCPSocketListener } from 'bun';
import { gzipSync } from 'node:zlib';
import { AbortScope } from './abort-scope.ts';
import { readLegText } from './idle.ts';
import { sendLeg, type LegSending } from './send-leg.ts';
import { UnusableAnswer } from './unusable-answer.ts';
import { neverSent } from '../../platform/platform.ts';

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

/** A raw TCP engine answering each request with `answer`; counts requests and connections. */
function engine(answer: (socket: Socket<undefined>, request: number) => void) {
  const sockets: Socket<undefined>[] = [];
  const state = { requests: 0, connections: 0, sockets };
  const server: TCPSocketListener<undefined> = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        state.connections++;
        sockets.push(socket);
      },
      data(socket) {
        answer(socket, ++state.requests);
      },
    },
  });
  stops.push(() => server.stop(true));
  return { get: () => state, url: `http://127.0.0.1:${server.port}/v1/completions` };
}

const OK = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}';
const CLIENTS = ['sockets', 'fetch'] as const;
const sending = (client: (typeof CLIENTS)[number]): LegSending => ({ engineIdleTimeoutMs: 10_000, engineClient: client });

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

describe('sendLeg sends a leg once', () => {
  for (const client of CLIENTS) {
    test(`a connection lost after the request went out is not sent again, even a pooled one (${client})`, async () => {
      const e = engine((socket, n) => {
        if (n === 1) socket.write(OK);
        else socket.terminate();
      });
      const first = await sendLeg(e.url, {}, '{}', new AbortScope(), () => {}, sending(client));
      expect(await readLegText(first, 1024)).toBe('{}');
      const err = await failure(sendLeg(e.url, {}, '{"second":true}', new AbortScope(), () => {}, sending(client)));
      expect((err as { code?: string }).code).toBe('ECONNRESET');
      expect(neverSent(err)).toBe(false);
      // The engine got the second leg once, on the pooled connection, and nothing after.
      expect(e.get().requests).toBe(2);
      expect(e.get().connections).toBe(1);
    });

    test(`a refused connection proves the leg never left (${client})`, async () => {
      const e = engine(() => {});
      const url = e.url;
      for (const stop of stops.splice(0)) stop();
      const err = await failure(sendLeg(url, {}, '{}', new AbortScope(), () => {}, sending(client)));
      expect(neverSent(err)).toBe(true);
    });

    test(`an encoded answer is refused before its body is read, naming what the engine did (${client})`, async () => {
      const zipped = gzipSync('{"a":1}');
      const e = engine((socket) => {
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: ${zipped.length}\r\n\r\n`,
        );
        socket.write(zipped);
      });
      const err = await failure(sendLeg(e.url, { 'accept-encoding': 'identity' }, '{}', new AbortScope(), () => {}, sending(client)));
      expect(err).toBeInstanceOf(UnusableAnswer);
      expect((err as Error).message).toStartWith('answered with Content-Encoding "gzip" though the leg asked for identity');
    });
  }

  test('a pooled connection found closed before one byte was written: the leg goes on a fresh one, once (sockets)', async () => {
    const e = engine((socket) => socket.write(OK));
    const first = await sendLeg(e.url, {}, '{}', new AbortScope(), () => {}, sending('sockets'));
    expect(await readLegText(first, 1024)).toBe('{}');
    // The engine resets the idle connection while this process is busy: the pool still holds it.
    e.get().sockets[0]!.terminate();
    Bun.sleepSync(50);
    let resent = 0;
    const second = await sendLeg(e.url, {}, '{}', new AbortScope(), () => resent++, sending('sockets'));
    expect(await readLegText(second, 1024)).toBe('{}');
    expect(resent).toBe(1);
    expect(e.get()).toMatchObject({ requests: 2, connections: 2 });
  });
});
