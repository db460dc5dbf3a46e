/**
 * Question: what does a gateway gain or lose running pdlink on Deno instead of Bun? The same code
 * runs as a "side" process on each platform, and this process (Bun) drives both in one run, as the
 * same client, against the same prefill contexts and fake engines, measure by measure with the two
 * platforms back to back (the first of them swapped every round):
 * (1) a link storm through the LinkManager (the device runtime's threads, 1 ms window): lone link+unlink pairs and
 *     pairs from 16 concurrent callers; beside it each platform's floor: direct FFI calls per second
 *     (pdrt_listen_port), direct pairs on the main thread (lone, and 16 clusters per call);
 * (2) POST /v1/instances/refresh over HTTP with 2 and 4096 instances (every instance changed from
 *     one request to the next, 8 connections);
 * (3) the proxy's added latency at concurrency 1 (p50/p99 over the client calling P then D itself,
 *     the floor) and its CPU per request at concurrency 32 (the side's own CPU clock), streamed
 *     completions against fast fake engines.
 * The answer is a ratio per round (Deno / Bun), median with the p10–p90 spread.
 *
 * Run: npx bun bench/platforms.bench.ts   (--quick: two short rounds that write nothing; --report: the
 * table and summary again from the rounds in bench/results/platforms.json, measuring nothing)
 * Each platform's side is bench/platforms-side.ts; the Deno one starts with `npx deno run -A`, and the
 * table is written by bench/platforms-report.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as ffi from '../src/ffi/index.ts';
import { DEFAULT_POOL_THREADS } from '../src/workers/pool.ts';
import { exampleSnapshot } from '../test/doubles/refresh-examples.ts';
import { FakeEngine } from '../test/fixtures/proxy/fake-engine.ts';
import { snapshot } from '../test/fixtures/proxy/harness.ts';
import { decodeResponder, prefillResponder } from '../test/fixtures/proxy/responders.ts';
import { RESULTS_DIR, percentile } from './lib.ts';
import { report, type Measure, type Round, type PlatformName } from './platforms-report.ts';
import { P_IP } from './platforms-side.ts';

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 2 : Number(process.env['RUNTIMES_ROUNDS'] ?? 12);
const FFI_MS = QUICK ? 50 : 300;
const LONE_PAIRS = QUICK ? 20 : 200;
const STORM_PAIRS = QUICK ? 160 : 1600;
const REFRESH_MS = QUICK ? 150 : 1000;
const REFRESH_CONNECTIONS = 8;
const LATENCY_REQUESTS = QUICK ? 30 : 300;
const CPU_REQUESTS = QUICK ? 100 : 1000;
const CPU_CONCURRENCY = 32;
const MODEL = 'test-model';
const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true });

class Side {
  readonly name: PlatformName;
  readonly child: ChildProcess;
  readonly ready: Promise<{ version: string; management: number; inference: number }>;
  #answers: ((line: string) => void)[] = [];
  #stderr = '';

  constructor(name: PlatformName, args: string[]) {
    this.name = name;
    const self = fileURLToPath(new URL('platforms-side.ts', import.meta.url));
    const command = name === 'bun' ? [process.execPath, self, ...args] : ['npx', 'deno', 'run', '-A', self, ...args];
    this.child = spawn(command[0]!, command.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.#stderr += chunk.toString()));
    const lines = createInterface({ input: this.child.stdout! });
    this.ready = new Promise((resolve, reject) => {
      this.child.once('exit', (code) => reject(new Error(`${name} side exited (${code}):\n${this.#stderr}`)));
      lines.once('line', (line) => resolve(JSON.parse(line)));
    });
    this.ready.then(
      () => lines.on('line', (line) => this.#answers.shift()?.(line)),
      () => {},
    );
  }

  /** Runs one command on the side and resolves with its value. */
  call(op: string, args: Record<string, unknown> = {}): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#answers.push((line) => {
        const reply = JSON.parse(line) as { ok: boolean; value?: number; message?: string };
        if (reply.ok) resolve(reply.value!);
        else reject(new Error(`${this.name} ${op}: ${reply.message}\n${this.#stderr}`));
      });
      this.child.stdin!.write(`${JSON.stringify({ op, ...args })}\n`);
    });
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    if (this.child.exitCode === null) {
      await this.call('exit').catch(() => {});
      this.child.stdin!.end();
    }
    await exited;
  }
}

/** Requests per second of POSTing `bodies` in turn to `url` over `connections` for `ms`. */
async function refreshRate(url: string, bodies: readonly string[], ms: number): Promise<number> {
  const end = performance.now() + ms;
  let sent = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: REFRESH_CONNECTIONS }, async () => {
      while (performance.now() < end) {
        const body = bodies[sent++ % bodies.length]!;
        const res = await fetch(`${url}/v1/instances/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`refresh answered ${res.status}`);
      }
    }),
  );
  return sent / ((performance.now() - start) / 1000);
}

let requestSeq = 0;

async function completion(url: string): Promise<void> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': `rt-${requestSeq++}` },
    body: BODY,
  });
  const text = await res.text();
  if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
}

/** The floor of the proxy: the client calls P, then D with P's kv_transfer_params, itself. */
async function twoLegs(p: string, d: string): Promise<void> {
  const headers = { 'content-type': 'application/json', 'x-request-id': `rt-${requestSeq++}` };
  const body = JSON.parse(BODY) as Record<string, unknown>;
  const pre = await fetch(`${p}/v1/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      ...body,
      stream: false,
      max_tokens: 1,
      kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false },
    }),
  });
  const answer = (await pre.json()) as { kv_transfer_params: unknown };
  const res = await fetch(`${d}/v1/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ ...body, kv_transfer_params: answer.kv_transfer_params }),
  });
  const text = await res.text();
  if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad direct answer ${res.status}`);
}

/** p50 and p99 in ms of `n` sequential calls. */
async function latencies(n: number, call: () => Promise<void>): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await call();
    ms.push(performance.now() - start);
  }
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

/** µs of the side's CPU per request over `n` requests at concurrency 32. */
async function cpuPerRequest(s: Side, url: string, n: number): Promise<number> {
  const before = await s.call('cpu');
  let next = 0;
  await Promise.all(
    Array.from({ length: CPU_CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        await completion(url);
      }
    }),
  );
  return ((await s.call('cpu')) - before) / n;
}

async function parent(): Promise<void> {
  // Sixteen prefill contexts the storm links to (their I/O runs on the runtime library's threads).
  const idBase = BigInt(Date.now()) * 1000n;
  const prefill = Array.from({ length: 16 }, (_, i) => ffi.create({ clusterId: idBase + BigInt(i), role: 'prompt', listenIp: P_IP }));
  const targets = prefill.map((h, i) => ({ id: String(idBase + BigInt(i)), port: ffi.listenPort(h) }));
  const p = await FakeEngine.start('127.0.0.4', 'p0', prefillResponder);
  const d = await FakeEngine.start('127.0.0.5', 'd0', decodeResponder);
  const args = [JSON.stringify(targets), JSON.stringify(snapshot([p], [d]))];
  const sides = [new Side('bun', args), new Side('deno', args)];
  const refreshBodies = (n: number) => [0, 1].map((load) => JSON.stringify(exampleSnapshot(n, { load })));
  const bodies2 = refreshBodies(2);
  const bodies4096 = refreshBodies(4096);
  try {
    const info = await Promise.all(sides.map((s) => s.ready));
    const url = (i: number, listener: 'management' | 'inference') => `http://127.0.0.1:${info[i]![listener]}`;
    const pUrl = `http://${p.host}:${p.port}`;
    const dUrl = `http://${d.host}:${d.port}`;

    /** Each measure of one side; the proxy's latencies come with their floor, measured right before them. */
    const steps = (i: number): [readonly Measure[], () => Promise<number[]>][] => {
      const s = sides[i]!;
      const one = (m: Measure, run: () => Promise<number>): [readonly Measure[], () => Promise<number[]>] => [
        [m],
        async () => [await run()],
      ];
      return [
        one('ffiCallsPerS', () => s.call('ffiCalls', { ms: FFI_MS })),
        one('directLoneUs', () => s.call('directLone', { pairs: LONE_PAIRS })),
        one('directBatchedPairsPerS', () => s.call('directBatched', { pairs: STORM_PAIRS })),
        one('managerLoneUs', () => s.call('managerLone', { pairs: LONE_PAIRS })),
        one('managerStormPairsPerS', () => s.call('managerStorm', { pairs: STORM_PAIRS })),
        one('refresh2PerS', () => refreshRate(url(i, 'management'), bodies2, REFRESH_MS)),
        one('refresh4096PerS', () => refreshRate(url(i, 'management'), bodies4096, REFRESH_MS)),
        [
          ['proxyAddedP50Ms', 'proxyAddedP99Ms'],
          async () => {
            const floor = await latencies(LATENCY_REQUESTS, () => twoLegs(pUrl, dUrl));
            const proxied = await latencies(LATENCY_REQUESTS, () => completion(url(i, 'inference')));
            return [proxied.p50 - floor.p50, proxied.p99 - floor.p99];
          },
        ],
        one('proxyCpuUsPerRequest', () => cpuPerRequest(s, url(i, 'inference'), CPU_REQUESTS)),
      ];
    };

    // Measure by measure, both platforms back to back (the first one swapped every round), so the two
    // figures of a ratio come from adjacent moments of the shared machine's load.
    const runRound = async (r: number): Promise<Record<PlatformName, Round>> => {
      const out = { bun: {} as Round, deno: {} as Round };
      const order = r % 2 === 0 ? [0, 1] : [1, 0];
      const perSide = sides.map((_, i) => steps(i));
      for (let k = 0; k < perSide[0]!.length; k++) {
        for (const i of order) {
          const [measures, run] = perSide[i]![k]!;
          const values = await run();
          measures.forEach((m, j) => (out[sides[i]!.name][m] = values[j]!));
        }
      }
      p.requests.length = 0;
      d.requests.length = 0;
      return out;
    };

    await runRound(1); // warm-up, not recorded
    const rounds: Record<PlatformName, Round[]> = { bun: [], deno: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const round = await runRound(r);
      rounds.bun.push(round.bun);
      rounds.deno.push(round.deno);
      console.log(`round ${r + 1}/${ROUNDS} done`);
    }
    if (QUICK) {
      console.log(JSON.stringify(rounds, null, 2));
      return;
    }
    report(rounds, info[0]!.version, info[1]!.version, {
      ffiMs: FFI_MS,
      lonePairs: LONE_PAIRS,
      stormPairs: STORM_PAIRS,
      poolThreads: DEFAULT_POOL_THREADS,
      batchWindowMs: 1,
      refreshMs: REFRESH_MS,
      refreshConnections: REFRESH_CONNECTIONS,
      latencyRequests: LATENCY_REQUESTS,
      cpuRequests: CPU_REQUESTS,
      cpuConcurrency: CPU_CONCURRENCY,
    });
  } finally {
    await Promise.all(sides.map((s) => s.close()));
    await Promise.all([p.close(), d.close()]);
    for (const h of prefill) ffi.destroy(h);
  }
}

if (process.argv.includes('--report')) {
  // Renders the table and summary again from the rounds of the last run, without measuring.
  const last = JSON.parse(readFileSync(`${RESULTS_DIR}/platforms.json`, 'utf8')) as {
    rawRounds: Record<PlatformName, Round[]>;
    versions: Record<PlatformName, string>;
    settings: Record<string, number>;
  };
  report(last.rawRounds, last.versions.bun, last.versions.deno, last.settings);
} else await parent();
