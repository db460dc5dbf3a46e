import { describe, expect, test } from 'bun:test';
import { createServer } from 'node:net';
import { refusesConnections } from './etcd.ts';

/** A port on 127.0.0.1 that was just listened on and closed: nothing listens there now. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('refusesConnections', () => {
  test('true where nothing listens, false where something does, with or without a scheme', async () => {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const closed = await closedPort();
    expect(await refusesConnections(`http://127.0.0.1:${port}`, 1000)).toBe(false);
    expect(await refusesConnections(`127.0.0.1:${port}`, 1000)).toBe(false);
    expect(await refusesConnections(`http://127.0.0.1:${closed}`, 1000)).toBe(true);
    expect(await refusesConnections(`https://127.0.0.1:${closed}`, 1000)).toBe(true);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('an endpoint that cannot be parsed is not a refusal (it says nothing about the member)', async () => {
    expect(await refusesConnections('http://[not-an-address', 100)).toBe(false);
  });
});
