/**
 * Question: what does a gateway gain or lose running pdlink on Deno instead of Bun? The same code
 * runs as a "side" process on each runtime, and this process (Bun) drives both in alternating
 * rounds of one run, as the same client, against the same prefill contexts and fake engines:
 * (1) a link storm through the LinkManager (worker pool, 1 ms window): lone link+unlink pairs and
 *     pairs from 16 concurrent callers; beside it each runtime's floor: direct FFI calls per second
 *     (pdrt_listen_port), direct pairs on the main thread (lone, and 16 clusters per call);
 * (2) POST /v1/instances/refresh over HTTP with 2 and 4096 instances (every instance changed from
 *     one request to the next, 8 connections);
 * (3) the proxy's added latency at concurrency 1 (p50/p99 over the client calling P then D itself,
 *     the floor) and its CPU per request at concurrency 32 (the side's own CPU clock), streamed
 *     completions against fast fake engines.
 * The answer is a ratio per round (Deno / Bun), median with the p10–p90 spread.
 *
 * Run: npx bun bench/runtimes.bench.ts   (--quick: two short rounds that write nothing; --report: the
 * table and summary again from the rounds in bench/results/runtimes.json, measuring nothing)
 * The Deno side starts with `npx deno run -A bench/runtimes.bench.ts --side`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createCoordinator } from '../src/apps/coordinator.ts';
import { LLM_STATUS } from '../src/core/llm-status.ts';
import * as ffi from '../src/ffi/index.ts';
import { LinkManager } from '../src/links/manager.ts';
import type { EndpointTarget } from '../src/links/types.ts';
import { runtime } from '../src/runtime/index.ts';
import { parseRefresh } from '../src/schema/refresh.ts';
import { PoolLinkExecutor } from '../src/workers/pool-executor.ts';
import { DEFAULT_POOL_THREADS, WorkerPool } from '../src/workers/pool.ts';
import { FakeEngine } from '../test/fixtures/proxy/fake-engine.ts';
import { snapshot } from '../test/fixtures/proxy/harness.ts';
import { decodeResponder, prefillResponder } from '../test/fixtures/proxy/responders.ts';
import { exampleSnapshot } from '../test/doubles/refresh-examples.ts';
import { RESULTS_DIR, markdownTable, percentile, spread, times, writeResults, type Spread } from './lib.ts';

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
const P_IP = '127.0.0.2';
const D_IP = '127.0.0.3';
const MODEL = 'test-model';
const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true });

// ---------------------------------------------------------------------------------------------
// The side: one runtime's pdlink, driven by JSON lines on stdin, answering on stdout.

interface SideCommand {
  readonly op: string;
  readonly [key: string]: unknown;
}

async function side(): Promise<void> {
  const [targetsJson, engineSnapshot] = process.argv.slice(-2) as [string, string];
  const targets = (JSON.parse(targetsJson) as { id: string; port: number }[]).map((t): EndpointTarget => ({
    remoteClusterId: BigInt(t.id),
    remote: { ip: P_IP, port: t.port },
    local: { ip: D_IP, port: 0 },
  }));
  const specs: ffi.ClusterSpec[] = targets.map((t) => ({
    remoteClusterId: t.remoteClusterId,
    remoteIp: t.remote.ip,
    remotePort: t.remote.port,
    localIp: D_IP,
  }));
  const idBase = BigInt(Date.now()) * 1000n + BigInt(process.pid % 1000);
  const direct = ffi.create({ clusterId: idBase, role: 'decoder' });
  const pool = new WorkerPool({ threads: DEFAULT_POOL_THREADS });
  const created = await pool.run<number>({ op: 'create', clusterId: idBase + 1n, role: 'decoder', listenIp: null, listenPort: 0 });
  if (!created.ok) throw new Error(created.message);
  const executor = new PoolLinkExecutor({ pool, handles: new Map([['0', created.value]]) });
  const manager = new LinkManager({ executor, endpoints: ['0'], maxBatch: 16, batchWindowMs: 1 });

  const refresh = createCoordinator({ bodyLimitBytes: 8 * 1024 * 1024 });
  const proxy = createCoordinator();
  proxy.registry.apply(parseRefresh(JSON.parse(engineSnapshot)));
  const serve = (fetch: (request: Request, env: never) => Response | Promise<Response>) =>
    runtime.serve({ hostname: '127.0.0.1', port: 0, fetch: (request, env) => fetch(request, env as never), idleTimeoutSeconds: 60 });
  const management = serve(refresh.managementApp.fetch);
  const inference = serve(proxy.inferenceApp.fetch);

  const ok = (rets: readonly number[]): void => {
    if (rets.some((c) => c !== LLM_STATUS.LLM_SUCCESS)) throw new Error(`link call failed: ${rets.join(', ')}`);
  };
  const run = async (c: SideCommand): Promise<unknown> => {
    switch (c.op) {
      case 'ffiCalls': {
        const end = performance.now() + (c['ms'] as number);
        let calls = 0;
        while (performance.now() < end) {
          for (let i = 0; i < 1000; i++) ffi.listenPort(direct);
          calls += 1000;
        }
        return (calls * 1000) / (c['ms'] as number);
      }
      case 'directLone': {
        const us: number[] = [];
        for (let i = 0; i < (c['pairs'] as number); i++) {
          const spec = specs[i % specs.length]!;
          const start = performance.now();
          ok(ffi.link(direct, [spec], 3000).rets);
          ok(ffi.unlink(direct, [spec], 3000).rets);
          us.push((performance.now() - start) * 1000);
        }
        return percentile(us, 50);
      }
      case 'directBatched': {
        const calls = Math.ceil((c['pairs'] as number) / specs.length);
        const start = performance.now();
        for (let i = 0; i < calls; i++) {
          ok(ffi.link(direct, specs, 3000).rets);
          ok(ffi.unlink(direct, specs, 3000).rets);
        }
        return (calls * specs.length) / ((performance.now() - start) / 1000);
      }
      case 'managerLone': {
        const us: number[] = [];
        for (let i = 0; i < (c['pairs'] as number); i++) {
          const t = targets[i % targets.length]!;
          const start = performance.now();
          ok((await manager.linkClusters([t])).rets);
          ok((await manager.unlinkClusters([t])).rets);
          us.push((performance.now() - start) * 1000);
        }
        return percentile(us, 50);
      }
      case 'managerStorm': {
        const cycles = Math.ceil((c['pairs'] as number) / targets.length);
        const start = performance.now();
        for (let i = 0; i < cycles; i++) {
          for (const r of await Promise.all(targets.map((t) => manager.linkClusters([t])))) ok(r.rets);
          for (const r of await Promise.all(targets.map((t) => manager.unlinkClusters([t])))) ok(r.rets);
        }
        return (cycles * targets.length) / ((performance.now() - start) / 1000);
      }
      case 'cpu': {
        const { user, system } = process.cpuUsage();
        return user + system;
      }
      case 'exit':
        await manager.idle();
        await pool.run({ op: 'destroy', handle: created.value });
        ffi.destroy(direct);
        await Promise.all([pool.close(), management.stop(), inference.stop(), refresh.close(), proxy.close()]);
        setTimeout(() => process.exit(0), 0);
        return null;
      default:
        throw new Error(`unknown op ${c.op}`);
    }
  };

  const version = process.versions['deno'] ?? process.versions['bun'] ?? 'unknown';
  console.log(JSON.stringify({ ready: true, runtime: runtime.name, version, management: management.port, inference: inference.port }));
  // One command at a time: the parent waits for each answer, so measurements never overlap.
  for await (const line of createInterface({ input: process.stdin })) {
    const c = JSON.parse(line) as SideCommand;
    try {
      console.log(JSON.stringify({ ok: true, value: await run(c) }));
    } catch (error) {
      console.log(JSON.stringify({ ok: false, message: String(error) }));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The parent: prefill contexts and fake engines shared by both sides, the client, the rounds.

type RuntimeName = 'bun' | 'deno';

class Side {
  readonly name: RuntimeName;
  readonly child: ChildProcess;
  readonly ready: Promise<{ version: string; management: number; inference: number }>;
  #answers: ((line: string) => void)[] = [];
  #stderr = '';

  constructor(name: RuntimeName, args: string[]) {
    this.name = name;
    const self = fileURLToPath(import.meta.url);
    const command = name === 'bun' ? [process.execPath, self, '--side', ...args] : ['npx', 'deno', 'run', '-A', self, '--side', ...args];
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

const MEASURES = [
  'ffiCallsPerS',
  'directLoneUs',
  'directBatchedPairsPerS',
  'managerLoneUs',
  'managerStormPairsPerS',
  'refresh2PerS',
  'refresh4096PerS',
  'proxyAddedP50Ms',
  'proxyAddedP99Ms',
  'proxyCpuUsPerRequest',
] as const;
type Measure = (typeof MEASURES)[number];
type Round = Record<Measure, number>;

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

    // Measure by measure, both runtimes back to back (the first one swapped every round), so the two
    // figures of a ratio come from adjacent moments of the shared machine's load.
    const runRound = async (r: number): Promise<Record<RuntimeName, Round>> => {
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
    const rounds: Record<RuntimeName, Round[]> = { bun: [], deno: [] };
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
    report(rounds, info[0]!.version, info[1]!.version);
  } finally {
    await Promise.all(sides.map((s) => s.close()));
    await Promise.all([p.close(), d.close()]);
    for (const h of prefill) ffi.destroy(h);
  }
}

const LABELS: Record<Measure, [string, 'higher' | 'lower']> = {
  ffiCallsPerS: ['direct FFI calls/s (pdrt_listen_port, main thread)', 'higher'],
  directLoneUs: ['direct link+unlink pair, µs (median, main thread)', 'lower'],
  directBatchedPairsPerS: ['direct pairs/s, 16 clusters per call', 'higher'],
  managerLoneUs: ['LinkManager lone link+unlink pair, µs (median)', 'lower'],
  managerStormPairsPerS: ['LinkManager pairs/s, 16 concurrent callers', 'higher'],
  refresh2PerS: ['refresh over HTTP, 2 instances, requests/s', 'higher'],
  refresh4096PerS: ['refresh over HTTP, 4096 instances, requests/s', 'higher'],
  proxyAddedP50Ms: ['proxy added latency p50 at c=1, ms', 'lower'],
  proxyAddedP99Ms: ['proxy added latency p99 at c=1, ms', 'lower'],
  proxyCpuUsPerRequest: ['proxy CPU per request at c=32, µs', 'lower'],
};

function report(rounds: Record<RuntimeName, Round[]>, bunVersion: string, denoVersion: string): void {
  const stats = {} as Record<Measure, { bun: number; deno: number; ratio: Spread; ratios: number[] }>;
  for (const m of MEASURES) {
    const bun = rounds.bun.map((r) => r[m]);
    const deno = rounds.deno.map((r) => r[m]);
    const ratios = deno.map((x, i) => x / bun[i]!);
    stats[m] = { bun: percentile(bun, 50), deno: percentile(deno, 50), ratio: spread(ratios), ratios };
  }
  const fmt = (x: number) => (Math.abs(x) >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(2));
  const rows = MEASURES.map((m) => {
    const [label, better] = LABELS[m];
    const s = stats[m];
    const winner = (better === 'higher') === s.ratio.median > 1 ? 'Deno' : 'Bun';
    return [
      label,
      fmt(s.bun),
      fmt(s.deno),
      `${times(s.ratio.median)} (p10 ${times(s.ratio.p10)}, p90 ${times(s.ratio.p90)})`,
      `${better} is better: ${winner}`,
    ];
  });
  const r = (m: Measure) => times(stats[m].ratio.median);
  const within = (rt: RuntimeName, a: Measure, b: Measure) =>
    times(
      percentile(
        rounds[rt].map((x) => x[a] / x[b]),
        50,
      ),
    );
  const summary = [
    `Bun ${bunVersion} and Deno ${denoVersion}, the same pdlink code on each, driven by one Bun client in ${ROUNDS} rounds after a warm-up round; ` +
      `in each round every measure ran on both runtimes back to back, the first of the two swapped every round; the table gives each runtime's median and the ` +
      `median of the per-round Deno / Bun ratios with their p10–p90 spread.`,
    `FFI: Deno's \`Deno.dlopen\` call on a context handle runs at ${r('ffiCallsPerS')} Bun's \`bun:ffi\` rate (the handle becomes a pointer ` +
      `object on Deno, a plain number on Bun). A direct lone link+unlink pair takes ${r('directLoneUs')} Bun's time and the 16-per-call ` +
      `direct rate is ${r('directBatchedPairsPerS')} Bun's: the pair is dominated by the runtime library's socket round trips, the same on both.`,
    `Link storm through the LinkManager: a lone pair takes ${r('managerLoneUs')} Bun's time; 16 concurrent callers get ${r('managerStormPairsPerS')} ` +
      `Bun's pair rate. Within each runtime the manager's lone pair is ${within('bun', 'managerLoneUs', 'directLoneUs')} (Bun) and ` +
      `${within('deno', 'managerLoneUs', 'directLoneUs')} (Deno) the direct pair: the worker-pool hops cost each runtime differently.`,
    `Refresh over HTTP: ${r('refresh2PerS')} Bun's request rate with 2 instances (the serving path dominates) and ${r('refresh4096PerS')} with ` +
      `4096 (JSON parsing and validation dominate).`,
    `Proxy: added latency at c=1 is ${r('proxyAddedP50Ms')} Bun's at p50 and ${r('proxyAddedP99Ms')} at p99 (each over the client's own ` +
      `two-leg call measured right before it); CPU per streamed request at c=32 is ${r('proxyCpuUsPerRequest')} Bun's.`,
    `The machine is a 2-core VM shared with other engineers' tests and benchmarks while this ran; the client, the fake engines and the ` +
      `prefill contexts share it too, so only the ratios of one run mean anything.`,
  ].join('\n\n');
  writeResults('runtimes', {
    json: {
      question: 'Bun vs Deno for pdlink: link storm (and FFI floor), refresh over HTTP, proxy added latency and CPU per request',
      rounds: ROUNDS,
      versions: { bun: bunVersion, deno: denoVersion },
      settings: {
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
      },
      measures: stats,
      rawRounds: rounds,
    },
    markdownTable: markdownTable(['measure', `Bun ${bunVersion}`, `Deno ${denoVersion}`, 'Deno / Bun', 'verdict'], rows),
    summary,
  });
  console.log(summary);
}

if (process.argv.includes('--side')) await side();
else if (process.argv.includes('--report')) {
  // Renders the table and summary again from the rounds of the last run, without measuring.
  const { readFileSync } = await import('node:fs');
  const last = JSON.parse(readFileSync(`${RESULTS_DIR}/runtimes.json`, 'utf8')) as {
    rawRounds: Record<RuntimeName, Round[]>;
    versions: Record<RuntimeName, string>;
  };
  report(last.rawRounds, last.versions.bun, last.versions.deno);
} else await parent();
