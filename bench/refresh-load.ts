/**
 * The refresh benchmark's load side: a raw-socket HTTP client that keeps HTTP_CONNECTIONS keep-alive
 * connections busy, the server's CPU time per request read from /proc, and the check that the floor
 * answers what pdlink answers.
 */
import type { Socket } from 'bun';
import { readdirSync, readFileSync } from 'node:fs';
import { launchEnv } from '../src/platform/launch-env.ts';
import { exampleSnapshot, SEED_REFRESH_BODY } from '../test/doubles/refresh-examples.ts';

/** Keep-alive connections the load generator keeps busy. */
export const HTTP_CONNECTIONS = 8;

export interface Server {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * Requests per second of one round against `server`; pushes the server's CPU time per request in
 * that round (µs) onto `cpuUs`, and the share of it its JIT compiler threads took onto `jitShare`.
 * CPU time is what the server spent, whoever else ran on the machine meanwhile, so its ratio is
 * steadier than that of throughput on a shared machine.
 */
export async function measured(
  server: Server,
  requests: readonly Uint8Array[],
  cpuUs: number[],
  durationMs: number,
  jitShare: number[] = [],
): Promise<number> {
  const before = cpuNs(server.pid);
  const jitBefore = jitNs(server.pid);
  const { rate, completed } = await load(server.port, requests, durationMs);
  const spent = cpuNs(server.pid) - before;
  cpuUs.push(spent / 1000 / completed);
  jitShare.push((jitNs(server.pid) - jitBefore) / spent);
  return rate;
}

/** Warm-up goes on in chunks of this long until the JIT threads use under JIT_SETTLED of QUIET_CHUNKS chunks' CPU in a row. */
const WARM_CHUNK_MS = 500;
const JIT_SETTLED = 0.02;
const QUIET_CHUNKS = 3;

/**
 * Sends `requests` to `server` until its JIT compilers have settled: QUIET_CHUNKS chunks in a row in
 * which they took under JIT_SETTLED of the process's CPU, or `maxMs` in all. A server with more code
 * takes longer to get there (pdlink's Coordinator some seconds, the raw server well under one), and
 * measuring earlier counts one-off compilation as per-request cost. Returns the requests it took.
 */
export async function warmUntilCompiled(server: Server, requests: readonly Uint8Array[], maxMs: number): Promise<number> {
  const started = performance.now();
  let sent = 0;
  let quiet = 0;
  while (quiet < QUIET_CHUNKS && performance.now() - started < maxMs) {
    const cpu0 = cpuNs(server.pid);
    const jit0 = jitNs(server.pid);
    sent += (await load(server.port, requests, WARM_CHUNK_MS)).completed;
    quiet = (jitNs(server.pid) - jit0) / (cpuNs(server.pid) - cpu0) < JIT_SETTLED ? quiet + 1 : 0;
  }
  return sent;
}

/** CPU time of a process so far, all its threads (Linux schedstat, ns); NaN where unreadable. */
export function cpuNs(pid: number): number {
  return threadsNs(pid, () => true);
}

/**
 * Threads of JavaScriptCore's compilers. Not `JSCWarmUp`: that thread makes the pages of new heap
 * blocks resident before the allocator hands them out, a cost of allocating that lasts as long as
 * the allocating does, and part of what a request costs.
 */
const JIT_THREAD = /^JITWorker/;

/** CPU time of a process's JIT compiler threads so far (ns); NaN where unreadable. */
export function jitNs(pid: number): number {
  return threadsNs(pid, (task) => JIT_THREAD.test(readFileSync(`/proc/${pid}/task/${task}/comm`, 'latin1')));
}

function threadsNs(pid: number, counted: (task: string) => boolean): number {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return Number.NaN;
  }
  let total = 0;
  for (const task of tasks) {
    try {
      if (counted(task)) total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'latin1').split(' ')[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return total;
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

/**
 * How the snapshots of a case differ from one request to the next: not at all (`same`: the
 * Controller resending), in every instance's free slots alone (`loads`: its usual refresh while the
 * topology holds), or in every instance beyond its loads too (`whole`: a model name and the loads,
 * so every instance is replaced).
 */
export type RefreshChange = 'same' | 'loads' | 'whole';

/**
 * The snapshots a case sends in turn: one (same) or two, of 2 instances (the seed's example, as its
 * text is written: a Controller writes its snapshots the same way each time) or `size` generated
 * ones (compact).
 * @example refreshBodies(4096, 'loads').length // 2
 */
export function refreshBodies(size: number, change: RefreshChange): string[] {
  if (size === 2) {
    if (change === 'same') return [SEED_REFRESH_BODY];
    let other = SEED_REFRESH_BODY.replace(/("avail_slots_num":\s*)(\d+)/g, (_, key: string, n: string) => `${key}${Number(n) - 1}`);
    if (change === 'whole') other = other.replaceAll('"your_model_name"', '"another_model_name"');
    if (other === SEED_REFRESH_BODY) throw new Error('the seed example has nothing to change');
    return [SEED_REFRESH_BODY, other];
  }
  const first = JSON.stringify(exampleSnapshot(size));
  if (change === 'same') return [first];
  const other = exampleSnapshot(size, { load: 1 });
  if (change === 'whole') for (const instance of other.instances) instance.model_name = 'another-model';
  return [first, JSON.stringify(other)];
}

/**
 * A refresh request as raw HTTP/1.1 bytes for the load generator.
 * @example const requests = bodies.map((body) => refreshRequest(server.port, body));
 */
export function refreshRequest(port: number, body: string): Uint8Array {
  return new TextEncoder().encode(
    `POST /v1/instances/refresh HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/**
 * Starts `bun <script> serve <kind>` (pinned to `core` when given) and waits for the port it
 * prints. pdlink's server runs with the settings its launcher gives it, the raw one with Bun's own.
 * @example const server = await startRefreshServer('bench/refresh.bench.ts', 'pdlink', '1');
 */
export async function startRefreshServer(script: string, kind: string, core: string | undefined): Promise<Server> {
  const command = [process.execPath, script, 'serve', kind];
  const child = Bun.spawn(core === undefined ? command : ['taskset', '-c', core, ...command], {
    env: kind === 'pdlink' ? { ...process.env, ...launchEnv() } : process.env,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
  });
  const { port } = JSON.parse(await firstLine(child.stdout)) as { port: number };
  return {
    port,
    pid: child.pid,
    async stop() {
      child.stdin.end();
      await child.exited;
    },
  };
}
