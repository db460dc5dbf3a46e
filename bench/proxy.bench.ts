/**
 * Question: what does the pdlink PD proxy add to a request, and how many requests a second does
 * it carry, compared with calling the prefill engine then the decode engine directly (the floor:
 * the same two legs with no proxy), and with vLLM's toy PD proxy?
 *
 * Set-up: a simulated cluster (src/sim/cluster/cluster.ts) of one prefill and one decode `pdlink sim-engine`
 * with zero simulated compute time, so what is measured is HTTP, the proxy and the engines' real
 * KV work (write, pull over the link, verify: 4 blocks of 4 KiB per request). Each request is a
 * streaming completion of a 64-token prompt and 16 generated tokens, read to its end.
 *   - sequential: added latency = p50 (p99) of a mode's latencies minus the floor's, per round;
 *   - concurrency 32: requests per second over a fixed number of requests.
 * Modes run in rotating order every round (ABC, BCA, CAB, ...) so the shared machine's drift hits
 * them alike; figures are medians over rounds, and ratios are taken within each round.
 *
 * The toy proxy runs only when PDLINK_PEER_TOY_PROXY names a copy of vLLM's
 * tests/v1/kv_connector/nixl_integration/toy_proxy_server.py (it is not part of this repository),
 * on Debian's packages: `apt-get install -y python3-fastapi python3-httpx python3-uvicorn`, run with
 * /usr/bin/python3 (PDLINK_PEER_PYTHON overrides). Debian's FastAPI 0.92 ignores `lifespan=`, so
 * a small runner sets `app.router.lifespan_context` and starts uvicorn with its access log off
 * (which only helps the toy proxy).
 *
 * Run: `bun bench/proxy.bench.ts` (or `npm run bench -- proxy`); results in bench/results/proxy.*.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable, percentile, spread, times, writeResults } from './lib.ts';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { until } from '../src/sim/cluster/process.ts';

const ROUNDS = Number(process.env['PROXY_BENCH_ROUNDS'] ?? 8);
const SEQUENTIAL_PER_ROUND = Number(process.env['PROXY_BENCH_SEQUENTIAL'] ?? 150);
const CONCURRENT_PER_ROUND = Number(process.env['PROXY_BENCH_CONCURRENT'] ?? 1200);
const CONCURRENCY = 32;
const MODEL = 'bench-sim';
const BODY = { model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true };

type Mode = 'floor' | 'pdlink' | 'toy';
type Send = () => Promise<void>;

/** Reads a streamed answer to its end and checks that it ended well. */
async function drain(res: Response): Promise<void> {
  const text = await res.text();
  if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
}

function post(url: string, body: unknown, requestId?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (requestId !== undefined) headers['x-request-id'] = requestId;
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

let seq = 0;

/** The floor: the client itself sends P's leg, then D's leg with P's kv_transfer_params. */
function floorSender(pUrl: string, dUrl: string): Send {
  return async () => {
    const id = `floor-${seq++}`;
    const pre = await post(
      `${pUrl}/v1/completions`,
      { ...BODY, stream: false, max_tokens: 1, kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } },
      id,
    );
    const answer = (await pre.json()) as { kv_transfer_params?: unknown };
    if (pre.status !== 200) throw new Error(`prefill answered ${pre.status}`);
    await drain(await post(`${dUrl}/v1/completions`, { ...BODY, kv_transfer_params: answer.kv_transfer_params }, id));
  };
}

function proxySender(url: string): Send {
  return async () => drain(await post(`${url}/v1/completions`, BODY, `bench-${seq++}`));
}

async function sequential(send: Send, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await send();
    ms.push(performance.now() - t0);
  }
  return ms;
}

async function throughput(send: Send, n: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        await send();
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

const RUNNER = `
import importlib.util, sys
path, host, port, phost, pport, dhost, dport = sys.argv[1:8]
spec = importlib.util.spec_from_file_location("toy_proxy_server", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
sys.argv = [path, "--host", host, "--port", port, "--prefiller-hosts", phost, "--prefiller-ports", pport, "--decoder-hosts", dhost, "--decoder-ports", dport]
mod.global_args = mod.parse_args()
# FastAPI 0.92 ignores FastAPI(lifespan=...): hand the context to the router itself.
mod.app.router.lifespan_context = mod.lifespan
import uvicorn
uvicorn.run(mod.app, host=host, port=int(port), log_level="warning", access_log=False)
`;

async function freePort(hostname: string): Promise<number> {
  const server = Bun.serve({ hostname, port: 0, fetch: () => new Response() });
  const port = server.port!;
  await server.stop(true);
  return port;
}

async function startToyProxy(path: string, cluster: SimCluster): Promise<{ url: string; stop: () => Promise<void> }> {
  const python = process.env['PDLINK_PEER_PYTHON'] ?? '/usr/bin/python3';
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-toy-'));
  const runner = join(dir, 'run_toy_proxy.py');
  writeFileSync(runner, RUNNER);
  const host = new URL(cluster.proxyUrl).hostname;
  const port = await freePort(host);
  const p = new URL(cluster.engine('p0').inferenceUrl);
  const d = new URL(cluster.engine('d0').inferenceUrl);
  const child = spawn(python, [runner, path, host, String(port), p.hostname, p.port, d.hostname, d.port], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://${host}:${port}`;
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`the toy proxy exited: ${err}`);
        return (await fetch(`${url}/healthcheck`).catch(() => undefined))?.status === 200 ? true : undefined;
      },
      30_000,
      () => `the toy proxy did not answer /healthcheck: ${err}`,
    );
  } catch (e) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const cluster = await SimCluster.start({
  prefill: 1,
  decode: 1,
  model: MODEL,
  engine: { prefillMsPerToken: 0, decodeMsPerToken: 0, numBlocks: 4096, blockBytes: 4096, blockTokens: 16 },
});
const toyPath = process.env['PDLINK_PEER_TOY_PROXY'];
let toy: Awaited<ReturnType<typeof startToyProxy>> | undefined;
try {
  if (toyPath !== undefined && toyPath !== '') {
    if (!existsSync(toyPath)) throw new Error(`PDLINK_PEER_TOY_PROXY=${toyPath}: no such file`);
    toy = await startToyProxy(toyPath, cluster);
  }
  const senders: Partial<Record<Mode, Send>> = {
    floor: floorSender(cluster.engine('p0').inferenceUrl, cluster.engine('d0').inferenceUrl),
    pdlink: proxySender(cluster.proxyUrl),
    ...(toy === undefined ? {} : { toy: proxySender(toy.url) }),
  };
  const modes = Object.keys(senders) as Mode[];
  console.log(
    `modes: ${modes.join(', ')}; ${ROUNDS} rounds of ${SEQUENTIAL_PER_ROUND} sequential and ${CONCURRENT_PER_ROUND} concurrent (${CONCURRENCY}) requests per mode`,
  );
  for (const mode of modes) await throughput(senders[mode]!, 300);

  const seqRounds: Record<Mode, { p50: number; p99: number }[]> = { floor: [], pdlink: [], toy: [] };
  const rpsRounds: Record<Mode, number[]> = { floor: [], pdlink: [], toy: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = modes.map((_, i) => modes[(i + round) % modes.length]!);
    for (const mode of order) {
      const ms = await sequential(senders[mode]!, SEQUENTIAL_PER_ROUND);
      seqRounds[mode].push({ p50: percentile(ms, 50), p99: percentile(ms, 99) });
    }
    for (const mode of [...order].reverse()) rpsRounds[mode].push(await throughput(senders[mode]!, CONCURRENT_PER_ROUND));
    console.log(
      `round ${round + 1}: ${modes.map((m) => `${m} p50 ${seqRounds[m].at(-1)!.p50.toFixed(2)} ms, ${rpsRounds[m].at(-1)!.toFixed(0)} req/s`).join('; ')}`,
    );
  }

  const added = (mode: Mode, key: 'p50' | 'p99') => seqRounds[mode].map((r, i) => r[key] - seqRounds.floor[i]![key]);
  const med = (values: number[]) => spread(values).median;
  const figures: Record<string, unknown> = {};
  const rows: (string | number)[][] = [];
  for (const mode of modes) {
    const row = {
      latencyP50Ms: med(seqRounds[mode].map((r) => r.p50)),
      latencyP99Ms: med(seqRounds[mode].map((r) => r.p99)),
      addedP50Ms: mode === 'floor' ? 0 : med(added(mode, 'p50')),
      addedP99Ms: mode === 'floor' ? 0 : med(added(mode, 'p99')),
      requestsPerSecond: med(rpsRounds[mode]),
      throughputVsFloor: med(rpsRounds[mode].map((r, i) => r / rpsRounds.floor[i]!)),
    };
    figures[mode] = { ...row, rounds: { sequential: seqRounds[mode], requestsPerSecond: rpsRounds[mode] } };
    rows.push([
      mode,
      row.latencyP50Ms.toFixed(2),
      row.latencyP99Ms.toFixed(2),
      row.addedP50Ms.toFixed(2),
      row.addedP99Ms.toFixed(2),
      row.requestsPerSecond.toFixed(0),
      times(row.throughputVsFloor),
    ]);
  }
  const lines = [
    `pdlink proxy: adds ${(figures['pdlink'] as { addedP50Ms: number }).addedP50Ms.toFixed(2)} ms at p50 and ${(figures['pdlink'] as { addedP99Ms: number }).addedP99Ms.toFixed(2)} ms at p99 over calling P then D directly; throughput at concurrency ${CONCURRENCY} is ${times((figures['pdlink'] as { throughputVsFloor: number }).throughputVsFloor)} the floor's.`,
  ];
  if (toy !== undefined) {
    const addedRatio = med(added('pdlink', 'p50').map((a, i) => a / added('toy', 'p50')[i]!));
    const addedP99Ratio = med(added('pdlink', 'p99').map((a, i) => a / added('toy', 'p99')[i]!));
    const rpsRatio = med(rpsRounds.pdlink.map((r, i) => r / rpsRounds.toy[i]!));
    figures['ratios'] = { addedP50PdlinkOverToy: addedRatio, addedP99PdlinkOverToy: addedP99Ratio, throughputPdlinkOverToy: rpsRatio };
    lines.push(
      `Against vLLM's toy proxy: added p50 ${times(addedRatio)} the toy's (goal ≤ 0.2×: ${addedRatio <= 0.2 ? 'met' : 'not met'}), added p99 ${times(addedP99Ratio)}, throughput ${times(rpsRatio)} the toy's (goal ≥ 5×: ${rpsRatio >= 5 ? 'met' : 'not met'}).`,
    );
  } else {
    lines.push('The toy proxy was not measured (PDLINK_PEER_TOY_PROXY unset).');
  }
  const summary = lines.join('\n');
  console.log(summary);
  writeResults('proxy', {
    json: {
      rounds: ROUNDS,
      sequentialPerRound: SEQUENTIAL_PER_ROUND,
      concurrentPerRound: CONCURRENT_PER_ROUND,
      concurrency: CONCURRENCY,
      request: BODY,
      figures,
    },
    markdownTable: markdownTable(
      ['mode', 'latency p50 ms', 'latency p99 ms', 'added p50 ms', 'added p99 ms', `req/s at c=${CONCURRENCY}`, 'throughput vs floor'],
      rows,
    ),
    summary,
  });
} finally {
  await toy?.stop();
  await cluster.stop();
}
process.exit(0);
