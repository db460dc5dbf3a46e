/**
 * The refresh benchmark's load side: a raw-socket HTTP client that keeps HTTP_CONNECTIONS keep-alive
 * connections busy, the server's CPU time per request read from /proc, and the check that the floor
 * answers what pdlink answers.
 */
import type { Socket } from 'bun';
import { readdirSync, readFileSync } from 'node:fs';
import { SEED_REFRESH_BODY } from '../test/doubles/refresh-examples.ts';

/** Keep-alive connections the load generator keeps busy. */
export const HTTP_CONNECTIONS = 8;

export interface Server {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * Requests per second of one round against `server`; pushes the server's CPU time per request in
 * that round (µs) onto `cpuUs`. CPU time is what the server spent, whoever else ran on the machine
 * meanwhile, so its ratio is steadier than that of throughput on a shared machine.
 */
export async function measured(server: Server, requests: readonly Uint8Array[], cpuUs: number[], durationMs: number): Promise<number> {
  const before = cpuNs(server.pid);
  const { rate, completed } = await load(server.port, requests, durationMs);
  cpuUs.push((cpuNs(server.pid) - before) / 1000 / completed);
  return rate;
}

/** CPU time of a process so far, all its threads (Linux schedstat, ns); NaN where unreadable. */
export function cpuNs(pid: number): number {
  try {
    let total = 0;
    for (const task of readdirSync(`/proc/${pid}/task`))
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'latin1').split(' ')[0]);
    return total;
  } catch {
    return Number.NaN;
  }
}

/** The floor must answer what pdlink answers: same status and body for the same refresh. */
export async function sameAnswers(rawPort: number, pdlinkPort: number): Promise<void> {
  const answer = async (port: number) => {
    const response = await fetch(`http://127.0.0.1:${port}/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: SEED_REFRESH_BODY,
    });
    return `${response.status} ${JSON.stringify(await response.text())}`;
  };
  const [raw, pdlink] = [await answer(rawPort), await answer(pdlinkPort)];
  if (raw !== pdlink) throw new Error(`the raw server answers ${raw}, pdlink ${pdlink}: the floor must answer the same`);
}

export async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of stream) {
    text += decoder.decode(chunk);
    const end = text.indexOf('\n');
    if (end >= 0) return text.slice(0, end);
  }
  throw new Error('the server process exited before printing its ports');
}

/**
 * Requests per second over `durationMs` from HTTP_CONNECTIONS keep-alive connections, each sending
 * the next request as soon as the previous answer is complete. A raw socket client: far lighter
 * than fetch, so the figure is the server's rather than the client's. Any non-200 fails the run.
 */
export async function load(
  port: number,
  requests: readonly Uint8Array[],
  durationMs: number,
): Promise<{ rate: number; completed: number }> {
  const deadline = performance.now() + durationMs;
  let completed = 0;
  // Requests go out in turn across all connections, so with two bodies each refresh differs from the last.
  let next = 0;
  const request = () => requests[next++ % requests.length]!;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: HTTP_CONNECTIONS }, async () => {
      const { promise, resolve, reject } = Promise.withResolvers<void>();
      let pending = '';
      await Bun.connect({
        hostname: '127.0.0.1',
        port,
        socket: {
          open(socket) {
            socket.write(request());
          },
          data(socket: Socket, chunk: Buffer) {
            pending += chunk.toString('latin1');
            for (;;) {
              const headerEnd = pending.indexOf('\r\n\r\n');
              if (headerEnd < 0) return;
              const head = pending.slice(0, headerEnd);
              const status = head.slice(9, 12);
              const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
              if (pending.length < headerEnd + 4 + length) return;
              if (status !== '200')
                return reject(new Error(`port ${port} answered ${head.split('\r\n')[0]}: ${pending.slice(headerEnd + 4)}`));
              pending = pending.slice(headerEnd + 4 + length);
              completed++;
              if (performance.now() >= deadline) {
                socket.end();
                return resolve();
              }
              socket.write(request());
            }
          },
          error: (_socket, error) => reject(error),
          close: () => resolve(),
        },
      });
      await promise;
    }),
  );
  return { completed, rate: completed / ((performance.now() - started) / 1000) };
}
