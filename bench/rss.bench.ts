/**
 * Question: how much memory does the Coordinator hold after a 4096-instance refresh and 100k
 * proxied requests, and does it stay flat over the next 100k? Goal: ≤ 100 MiB, flat. And how much
 * of it is pdlink's: a bare two-leg Bun proxy (the one of proxy-cpu.bench.ts) carries the same
 * load in the same run, and the JS heap is read by type before and after a full collection.
 *
 * Set-up: the proxy benchmark's simulated cluster (one prefill, one decode `pdlink sim-engine`, zero
 * compute time, 4 blocks of 4 KiB moved per request), whose refresh also lists 4094 instances that
 * are never picked (prefills no decode names, decodes that name no prefill), so the registry,
 * scheduler and ledger hold 4096. Requests: streaming completions at concurrency 32. Phases of
 * BENCH_RSS_REQUESTS requests (100,000 by default) in the order pdlink, bare, bare, pdlink, so drift
 * in the machine's load hits both alike. RSS is each process's VmRSS (/proc), read after each
 * phase and every 250 ms during it (mean over the phase's second half, and its peak: the end point
 * alone depends on where the collector's cycle happens to be); CPU is its utime+stime over the
 * phase. The heap by type comes from `bun:jsc` heapStats() inside the Coordinator, through a
 * preload script (BUN_OPTIONS) that answers SIGUSR2. The cluster's processes start with the
 * environment `bin/pdlink` gives them (src/platform/launch-env.ts), as shipped.
 * BENCH_RSS_BUN_OPTIONS adds Bun options (e.g. `--smol`) and BENCH_RSS_ENV variables (`K=V,K=V`, e.g.
 * a JSC or mimalloc setting, or `BUN_JSC_forceRAMSize` at the machine's memory to see the Coordinator
 * without the launcher's heap budget) to the cluster's processes; the bare proxy runs without.
 * RSS after a phase depends on when the collector last ran, so one run can differ from the next by
 * 10–20 MiB: BENCH_RSS_ROUNDS (default 3) repeats the whole set-up (fresh cluster, fresh bare proxy)
 * and the figures are medians over the rounds, each round's value listed beside them.
 *
 * Run: bun bench/rss.bench.ts   → bench/results/rss.{json,md}
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { refreshBody } from '../src/sim/cluster/cluster-bodies.ts';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { markdownTable, percentile, writeResults } from './lib.ts';
import { regions, type Regions } from './rss-regions.ts';

const PHASE = Number(process.env['BENCH_RSS_REQUESTS'] ?? 100_000);
const EXTRA_BUN_OPTIONS = process.env['BENCH_RSS_BUN_OPTIONS'] ?? '';
const EXTRA_ENV = (process.env['BENCH_RSS_ENV'] ?? '')
  .split(',')
  .filter((kv) => kv.includes('='))
  .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const);
const ROUNDS = Number(process.env['BENCH_RSS_ROUNDS'] ?? 3);
const CONCURRENCY = 32;
const INSTANCES = 4096;
const MODEL = 'bench-sim';
const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true });

/** The bare proxy of proxy-cpu.bench.ts: the client's body to P, P's kv_transfer_params to D, D's stream back. */
const BARE = `
const [p, d] = process.argv.slice(-2);
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, async fetch(req) {
  const body = await req.json();
  const id = req.headers.get('x-request-id') ?? '';
  const headers = { 'content-type': 'application/json', 'x-request-id': id };
  const pre = await fetch(p + '/v1/completions', { method: 'POST', headers,
    body: JSON.stringify({ ...body, stream: false, max_tokens: 1, kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } }) });
  const answer = await pre.json();
  const dec = await fetch(d + '/v1/completions', { method: 'POST', headers, body: JSON.stringify({ ...body, kv_transfer_params: answer.kv_transfer_params }) });
  return new Response(dec.body, { status: dec.status, headers: { 'content-type': dec.headers.get('content-type') ?? 'text/event-stream' } });
} });
console.log(server.port);
`;

/** Preloaded into the Coordinator only: on SIGUSR2 it writes its heap by type, then again after a full collection. */
const PROBE = `
import { heapStats } from 'bun:jsc';
import { writeFileSync } from 'node:fs';
if (process.argv.includes('coordinator')) {
  const top = (counts) => Object.entries(counts).sort((a, b) => b[1] - a[1]).slice(0, 12);
  const snap = () => {
    const h = heapStats();
    const m = process.memoryUsage();
    return { rssMiB: m.rss / 2 ** 20, heapMiB: h.heapSize / 2 ** 20, heapCapacityMiB: h.heapCapacity / 2 ** 20,
      extraMiB: h.extraMemorySize / 2 ** 20, objects: h.objectCount, top: top(h.objectTypeCounts) };
  };
  process.on('SIGUSR2', () => {
    const before = snap();
    Bun.gc(true);
    writeFileSync(process.env.PDLINK_RSS_PROBE_OUT, JSON.stringify({ before, after: snap() }));
  });
}
`;

interface HeapSnap {
  rssMiB: number;
  heapMiB: number;
  heapCapacityMiB: number;
  extraMiB: number;
  objects: number;
  top: [string, number][];
}

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in 100 Hz ticks
}

let seq = 0;
/** Sends `n` requests at concurrency 32; returns requests per second. */
async function load(url: string, n: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        const res = await fetch(`${url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': `rss-${seq++}` },
          body: BODY,
        });
        const text = await res.text();
        if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
      }
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

interface Phase {
  readonly rssMiB: number;
  /** RSS sampled every 250 ms: mean over the phase's second half, and the peak. */
  readonly rssMeanMiB: number;
  readonly rssPeakMiB: number;
  readonly reqPerS: number;
  readonly cpuUsPerRequest: number;
}

async function phase(pid: number, url: string): Promise<Phase> {
  const cpu = cpuMs(pid);
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(rssMiB(pid)), 250);
  const reqPerS = await load(url, PHASE).finally(() => clearInterval(sampler));
  const end = rssMiB(pid);
  const late = [...samples.slice(samples.length >> 1), end];
  return {
    rssMiB: end,
    rssMeanMiB: late.reduce((a, b) => a + b, 0) / late.length,
    rssPeakMiB: Math.max(end, ...samples),
    reqPerS,
    cpuUsPerRequest: ((cpuMs(pid) - cpu) * 1000) / PHASE,
  };
}

/** Asks the Coordinator's probe for its heap; waits for the file with a bound. */
async function heapOf(pid: number, out: string): Promise<{ before: HeapSnap; after: HeapSnap }> {
  rmSync(out, { force: true });
  process.kill(pid, 'SIGUSR2');
  const end = Date.now() + 30_000;
  while (!existsSync(out)) {
    if (Date.now() > end) throw new Error('the Coordinator did not answer the heap probe');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // The file may be seen before it is complete: read until it parses, with the same bound.
  for (;;) {
    try {
      return JSON.parse(readFileSync(out, 'utf8'));
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

interface Round {
  readonly afterRefresh: number;
  readonly first: Phase;
  readonly second: Phase;
  readonly bareStart: number;
  readonly bareFirst: Phase;
  readonly bareSecond: Phase;
  readonly heap: { before: HeapSnap; after: HeapSnap };
  /** The Coordinator's resident memory by kind of mapping after the second phase, and after the probe's full collection. */
  readonly regions: { before: Regions; after: Regions };
}

/** One round: a fresh cluster and bare proxy, the refresh, the four phases, the heap probe. */
async function round(): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-rss-'));
  const probe = join(dir, 'probe.ts');
  const probeOut = join(dir, 'heap.json');
  writeFileSync(probe, PROBE);
  // The cluster's processes inherit this environment; only the Coordinator installs the probe.
  const saved = new Map(['BUN_OPTIONS', ...EXTRA_ENV.map(([k]) => k)].map((k) => [k, process.env[k]]));
  process.env['BUN_OPTIONS'] = `${EXTRA_BUN_OPTIONS} --preload ${probe}`.trim();
  for (const [k, v] of EXTRA_ENV) process.env[k] = v;
  process.env['PDLINK_RSS_PROBE_OUT'] = probeOut;
  const cluster = await SimCluster.start({
    prefill: 1,
    decode: 1,
    model: MODEL,
    engine: { prefillMsPerToken: 0, decodeMsPerToken: 0, numBlocks: 4096, blockBytes: 4096, blockTokens: 16 },
  });
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const bare = Bun.spawn([process.execPath, '-e', BARE, cluster.engine('p0').inferenceUrl, cluster.engine('d0').inferenceUrl], {
    stdout: 'pipe',
    stderr: 'inherit',
  });
  try {
    const { value } = await bare.stdout.getReader().read();
    const bareUrl = `http://127.0.0.1:${Number(new TextDecoder().decode(value).trim())}`;
    const pid = cluster.coordinator.child.pid!;
    await refresh(cluster);
    const afterRefresh = rssMiB(pid);
    const bareStart = rssMiB(bare.pid);
    const first = await phase(pid, cluster.proxyUrl);
    const bareFirst = await phase(bare.pid, bareUrl);
    const bareSecond = await phase(bare.pid, bareUrl);
    const second = await phase(pid, cluster.proxyUrl);
    const executable = realpathSync(process.execPath);
    const before = regions(pid, executable);
    // Last: the probe's full collection changes what follows.
    const heap = await heapOf(pid, probeOut);
    const after = regions(pid, executable);
    console.log(
      `pdlink RSS ${afterRefresh.toFixed(1)} → ${first.rssMiB.toFixed(1)} → ${second.rssMiB.toFixed(1)} MiB; ` +
        `bare ${bareStart.toFixed(1)} → ${bareFirst.rssMiB.toFixed(1)} → ${bareSecond.rssMiB.toFixed(1)} MiB; ` +
        `heap ${heap.before.heapMiB.toFixed(1)} MiB → ${heap.after.heapMiB.toFixed(1)} MiB after a full GC (RSS ${heap.after.rssMiB.toFixed(1)})`,
    );
    return { afterRefresh, first, second, bareStart, bareFirst, bareSecond, heap, regions: { before, after } };
  } finally {
    bare.kill();
    await bare.exited;
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The 4096-instance snapshot: the simulated pair plus prefills and decodes that are never picked. */
async function refresh(cluster: SimCluster): Promise<void> {
  const entries = cluster.engines.map((e) => ({
    engine: e,
    inferencePort: Number(new URL(e.inferenceUrl).port),
    managementPort: Number(new URL(e.manageUrl).port),
  }));
  const body = refreshBody(entries, MODEL, cluster.settings) as { ids: number[]; instances: Record<string, any>[] };
  const template = body.instances[0]!;
  for (let k = 0; body.instances.length < INSTANCES; k++) {
    const id = 100_000 + k;
    const prefill = k % 2 === 0;
    body.ids.push(id);
    body.instances.push({
      ...template,
      id,
      ip: `10.9.${(k >> 8) & 255}.${k & 255}`,
      static_info: { ...template.static_info, group_id: 1000 + (k >> 4), role: prefill ? 80 : 68 },
      dynamic_info: { ...template.dynamic_info, ...(prefill ? { peers: undefined } : { peers: [] }) },
    });
  }
  const res = await fetch(`${cluster.coordinatorUrl}/v1/instances/refresh`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`refresh answered ${res.status}: ${await res.text()}`);
}

const rounds: Round[] = [];
for (let r = 0; r < ROUNDS; r++) rounds.push(await round());

const med = (pick: (r: Round) => number) => percentile(rounds.map(pick), 50);
const all = (pick: (r: Round) => number) => rounds.map((r) => pick(r).toFixed(1)).join(', ');
const f = (n: number) => n.toFixed(1);
const afterRefresh = med((r) => r.afterRefresh);
const first = med((r) => r.first.rssMiB);
const second = med((r) => r.second.rssMiB);
const bareStart = med((r) => r.bareStart);
const bareFirst = med((r) => r.bareFirst.rssMiB);
const bareSecond = med((r) => r.bareSecond.rssMiB);
const growth = med((r) => r.second.rssMiB - r.first.rssMiB);
const bareGrowth = med((r) => r.bareSecond.rssMiB - r.bareFirst.rssMiB);
// The heap by type and the regions of the round whose RSS after the first phase is the median (or next above it).
const medianRound = [...rounds].sort((a, b) => a.first.rssMiB - b.first.rssMiB)[Math.floor(rounds.length / 2)]!;
const heap = medianRound.heap;
const where = (r: Regions) =>
  `Bun's executable ${f(r.binaryCodeMiB)} code + ${f(r.binaryDataMiB)} data, anonymous (allocator arena: JS heap and native) ${f(r.anonymousMiB)}, ` +
  `JIT code ${f(r.jitMiB)}, libraries ${f(r.librariesMiB)}, other ${f(r.otherMiB)}`;
const settings = [EXTRA_BUN_OPTIONS, ...EXTRA_ENV.map(([k, v]) => `${k}=${v}`)].filter((x) => x !== '').join(' ');
const setting = settings === '' ? '' : ` (cluster run with \`${settings}\`)`;
const n = PHASE.toLocaleString('en');
const sign = (x: number) => `${x >= 0 ? '+' : ''}${f(x)}`;
const sampled = (pick: (r: Round) => Phase) =>
  `mean ${f(med((r) => pick(r).rssMeanMiB))} (rounds ${all((r) => pick(r).rssMeanMiB)}), peak ${f(med((r) => pick(r).rssPeakMiB))} (rounds ${all((r) => pick(r).rssPeakMiB)})`;
const summary = [
  `Coordinator RSS${setting}, medians of ${ROUNDS} rounds, each a fresh cluster: after a ${INSTANCES}-instance refresh ${f(afterRefresh)} MiB (rounds ${all((r) => r.afterRefresh)}); ` +
    `after ${n} proxied requests ${f(first)} MiB (rounds ${all((r) => r.first.rssMiB)}; goal ≤ 100 MiB: ${first <= 100 ? 'met' : 'not met'}); ` +
    `after ${n} more ${f(second)} MiB (rounds ${all((r) => r.second.rssMiB)}; change ${sign(growth)} MiB). ` +
    `Sampled every 250 ms over the phase's second half: first phase ${sampled((r) => r.first)} MiB; second phase ${sampled((r) => r.second)} MiB.`,
  `A bare two-leg Bun proxy on fetch under the same load in the same rounds: ${f(bareStart)} MiB idle, ${f(bareFirst)} MiB after ${n} requests (rounds ${all((r) => r.bareFirst.rssMiB)}), ` +
    `${f(bareSecond)} MiB after ${n} more (${sign(bareGrowth)} MiB). ` +
    `The bare proxy's growth is what the runtime itself does under this traffic; the Coordinator grows ${f(second - afterRefresh)} MiB over its idle size against the bare proxy's ${f(bareSecond - bareStart)} MiB.`,
  `The Coordinator's JS heap at the end of the median round: ${f(heap.before.heapMiB)} MiB in use (capacity ${f(heap.before.heapCapacityMiB)} MiB, ${heap.before.objects} objects, ` +
    `${f(heap.before.extraMiB)} MiB held outside the heap by its objects); after a full collection ${f(heap.after.heapMiB)} MiB (${heap.after.objects} objects) ` +
    `and RSS ${f(heap.before.rssMiB)} → ${f(heap.after.rssMiB)} MiB. Live objects by type after the collection: ${heap.after.top.map(([k, v]) => `${k} ${v}`).join(', ')}.`,
  `Where the Coordinator's RSS sits in that round (/proc smaps, MiB): after the second phase ${where(medianRound.regions.before)}; after the full collection ${where(medianRound.regions.after)}.`,
  `Coordinator CPU per request ${f(med((r) => r.first.cpuUsPerRequest))} and ${f(med((r) => r.second.cpuUsPerRequest))} µs (bare ${f(med((r) => r.bareFirst.cpuUsPerRequest))}, ${f(med((r) => r.bareSecond.cpuUsPerRequest))} µs); ` +
    `${med((r) => r.first.reqPerS).toFixed(0)} and ${med((r) => r.second.reqPerS).toFixed(0)} req/s (bare ${med((r) => r.bareFirst.reqPerS).toFixed(0)}, ${med((r) => r.bareSecond.reqPerS).toFixed(0)}). ` +
    `Streaming completions at concurrency ${CONCURRENCY}; phases in the order pdlink, bare, bare, pdlink, on a 2-core VM shared with other test runs.`,
].join('\n\n');
writeResults('rss', {
  json: {
    question: 'Coordinator RSS after 4096 instances and N requests, and over N more, next to a bare Bun proxy; JS heap by type',
    instances: INSTANCES,
    requestsPerPhase: PHASE,
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    bunOptions: EXTRA_BUN_OPTIONS,
    env: Object.fromEntries(EXTRA_ENV),
    order: ['pdlink', 'bare', 'bare', 'pdlink'],
    rssMiB: { afterRefresh, afterFirst: first, afterSecond: second },
    perRound: rounds,
  },
  markdownTable: markdownTable(
    ['point (median of rounds)', 'Coordinator RSS, MiB', 'bare Bun proxy RSS, MiB'],
    [
      [`idle (Coordinator: after the ${INSTANCES}-instance refresh)`, f(afterRefresh), f(bareStart)],
      [`after ${n} requests`, f(first), f(bareFirst)],
      [`after ${n} more`, f(second), f(bareSecond)],
      [
        'phase 1, 2: mean of 250 ms samples (second half) / peak',
        `${f(med((r) => r.first.rssMeanMiB))}, ${f(med((r) => r.second.rssMeanMiB))} / ${f(med((r) => r.first.rssPeakMiB))}, ${f(med((r) => r.second.rssPeakMiB))}`,
        `${f(med((r) => r.bareFirst.rssMeanMiB))}, ${f(med((r) => r.bareSecond.rssMeanMiB))} / ${f(med((r) => r.bareFirst.rssPeakMiB))}, ${f(med((r) => r.bareSecond.rssPeakMiB))}`,
      ],
      [
        'CPU µs per request (phases 1, 2)',
        `${f(med((r) => r.first.cpuUsPerRequest))}, ${f(med((r) => r.second.cpuUsPerRequest))}`,
        `${f(med((r) => r.bareFirst.cpuUsPerRequest))}, ${f(med((r) => r.bareSecond.cpuUsPerRequest))}`,
      ],
      ['JS heap in use → after a full GC, MiB (median round)', `${f(heap.before.heapMiB)} → ${f(heap.after.heapMiB)}`, '—'],
    ],
  ),
  summary,
});
