/**
 * Clients that close their connection in the middle of a request body, against a real Coordinator
 * process: each is a client event, not a server fault. On the management listener it is logged as
 * one line without a stack; on the inference listener it is counted
 * (`pdlink_pd_requests_total{outcome="client_abort"}`) and not logged at all. Every abort is
 * synchronised on events: the server's `100 Continue` says the handler is reading the body, a
 * metric says the abort was handled, and the process's exit says stderr is complete.
 */
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../src/sim/cluster/process.ts';
import { startPdlink } from './support/child.ts';

const ABORTS = 5;
const dir = mkdtempSync(join(tmpdir(), 'pdlink-abort-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Sends the head of a POST with `Expect: 100-continue`, waits for the server's 100 (its handler is
 * now waiting for the body), sends a part of the body and closes the connection.
 */
function abortMidBody(url: string, path: string): Promise<void> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nhost: pdlink\r\ncontent-type: application/json\r\ncontent-length: 100000\r\nexpect: 100-continue\r\n\r\n`,
      );
    });
    socket.on('error', reject);
    socket.once('data', (chunk: Buffer) => {
      if (!chunk.toString().startsWith('HTTP/1.1 100')) return reject(new Error(`expected 100 Continue, got ${chunk}`));
      socket.write('{"instances": [{"id": 0, ');
      socket.destroy();
      socket.once('close', () => resolve());
    });
  });
}

/** Sum of a metric's samples whose line contains `match`. */
async function metric(managementUrl: string, name: string, match: string): Promise<number> {
  const text = await (await fetch(`${managementUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(name) && line.includes(match))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

test(`${ABORTS} aborts mid-body on each Coordinator listener: one stderr line per management abort, none for the proxy`, async () => {
  const child = await startPdlink(['coordinator', '--manage_port', '0', '--predict_port', '0'], {
    listeners: ['management', 'inference'],
    cwd: dir,
    // Keeps the start-up advice about Bun's fetch cap off stderr, so stderr holds only what aborts write.
    env: { BUN_CONFIG_MAX_HTTP_REQUESTS: '65535' },
  });
  let stderr = '';
  child.process.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'exit' may come before the last stderr bytes; the pipe's close comes after all of them.
  const stderrClosed = new Promise((resolve) => child.process.stderr!.once('close', resolve));
  const management = child.urls.management!;
  const inference = child.urls.inference!;
  try {
    for (let i = 1; i <= ABORTS; i++) {
      await abortMidBody(management, '/v1/instances/refresh');
      await until(
        async () => ((await metric(management, 'pdlink_refresh_total', 'outcome="invalid"')) === i ? true : undefined),
        20_000,
        () => `refresh abort ${i} not handled`,
      );
    }
    for (let i = 1; i <= ABORTS; i++) {
      await abortMidBody(inference, '/v1/completions');
      await until(
        async () => ((await metric(management, 'pdlink_pd_requests_total', 'outcome="client_abort"')) === i ? true : undefined),
        20_000,
        () => `proxy abort ${i} not counted`,
      );
    }
    // The listeners still serve.
    expect((await fetch(`${management}/v1/health`)).status).toBe(200);
  } finally {
    await child.kill('SIGTERM');
    await stderrClosed;
  }
  const lines = stderr.split('\n').filter((line) => line !== '');
  expect(lines).toEqual(
    Array.from(
      { length: ABORTS },
      () => 'pdlink: POST /v1/instances/refresh: the client closed the connection before the request body was complete',
    ),
  );
}, 60_000);
