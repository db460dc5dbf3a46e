/**
 * Question: how much memory does the Coordinator hold after a 4096-instance refresh and 100k
 * proxied requests, and does it stay flat over the next 100k? Goal: ≤ 100 MiB, flat. And how much
 * of it is pdlink's: a bare two-leg Bun proxy (the one of proxy-cpu.bench.ts) carries the same
 * load in the same run, and the JS heap is read by type before and after a full collection. Two
 * Coordinators run: as bin/pdlink starts it (heap sized as for 512 MiB of RAM) and with the
 * runtime's own sizing (BUN_JSC_forceRAMSize=0), to show what the setting saves and costs in CPU.
 *
 * Set-up: the proxy benchmark's simulated cluster (one prefill, one decode `pdlink sim-engine`, zero
 * compute time, 4 blocks of 4 KiB moved per request), whose refresh also lists 4094 instances that
 * are never picked (prefills no decode names, decodes that name no prefill), so the registry,
 * scheduler and ledger hold 4096. Requests: streaming completions at concurrency 32. Phases of
 * BENCH_RSS_REQUESTS requests (100,000 by default) in the order shipped, default, bare, bare,
 * default, shipped, so drift in the machine's load hits all alike. RSS is each process's VmRSS
 * (/proc), read after each phase; CPU is its utime+stime over the phase. The heap by type comes
 * from `bun:jsc` heapStats() inside each Coordinator, through a preload script (BUN_OPTIONS) that
 * answers SIGUSR2.
 *
 * Run: bun bench/rss.bench.ts   → bench/results/rss.{json,md}
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { refreshBody } from '../src/sim/cluster-bodies.ts';
import { SimCluster } from '../src/sim/cluster.ts';
import { COORDINATOR_HEAP_RAM_BYTES } from '../src/sim/cluster-spawn.ts';
import { machine, markdownTable, times, writeResults } from './lib.ts';

const PHASE = Number(process.env['BENCH_RSS_REQUESTS'] ?? 100_000);
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
  readonly reqPerS: number;
  readonly cpuUsPerRequest: number;
}

async function phase(pid: number, url: string): Promise<Phase> {
  const cpu = cpuMs(pid);
  const reqPerS = await load(url, PHASE);
  return { rssMiB: rssMiB(pid), reqPerS, cpuUsPerRequest: ((cpuMs(pid) - cpu) * 1000) / PHASE };
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

const dir = mkdtempSync(join(tmpdir(), 'pdlink-rss-'));
const probe = join(dir, 'probe.ts');
writeFileSync(probe, PROBE);

interface Subject {
  readonly cluster: SimCluster;
  readonly probeOut: string;
}

/** Starts a simulated cluster whose Coordinator carries the probe; `env` is added for its processes. */
async function startCluster(name: string, env: Record<string, string>): Promise<Subject> {
  const probeOut = join(dir, `${name}-heap.json`);
  // The cluster's processes inherit this environment; only the Coordinator installs the probe.
  const vars = { BUN_OPTIONS: `--preload ${probe}`, PDLINK_RSS_PROBE_OUT: probeOut, ...env };
  const saved = Object.keys(vars).map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, vars);
  try {
    const cluster = await SimCluster.start({
      prefill: 1,
      decode: 1,
      model: MODEL,
      engine: { prefillMsPerToken: 0, decodeMsPerToken: 0, numBlocks: 4096, blockBytes: 4096, blockTokens: 16 },
    });
    return { cluster, probeOut };
  } finally {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Refreshes the Coordinator with its two engines and 4094 instances never picked. */
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

const shipped = await startCluster('shipped', {});
const runtimeDefault = await startCluster('default', { BUN_JSC_forceRAMSize: '0' });
const bare = Bun.spawn(
  [process.execPath, '-e', BARE, shipped.cluster.engine('p0').inferenceUrl, shipped.cluster.engine('d0').inferenceUrl],
  { stdout: 'pipe', stderr: 'inherit', env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'BUN_JSC_forceRAMSize')) },
);
try {
  const { value } = await bare.stdout.getReader().read();
  const bareUrl = `http://127.0.0.1:${Number(new TextDecoder().decode(value).trim())}`;
  const pidS = shipped.cluster.coordinator.child.pid!;
  const pidD = runtimeDefault.cluster.coordinator.child.pid!;
  await refresh(shipped.cluster);
  await refresh(runtimeDefault.cluster);
  const idleS = rssMiB(pidS);
  const idleD = rssMiB(pidD);
  const idleB = rssMiB(bare.pid);
  const s1 = await phase(pidS, shipped.cluster.proxyUrl);
  const d1 = await phase(pidD, runtimeDefault.cluster.proxyUrl);
  const b1 = await phase(bare.pid, bareUrl);
  const b2 = await phase(bare.pid, bareUrl);
  const d2 = await phase(pidD, runtimeDefault.cluster.proxyUrl);
  const s2 = await phase(pidS, shipped.cluster.proxyUrl);
  // Last: the probe's full collection changes what follows.
  const heapS = await heapOf(pidS, shipped.probeOut);
  const heapD = await heapOf(pidD, runtimeDefault.probeOut);
  const f = (n: number) => n.toFixed(1);
  const signed = (n: number) => `${n >= 0 ? '+' : ''}${f(n)}`;
  const n = PHASE.toLocaleString('en');
  const cpuCost = (s1.cpuUsPerRequest + s2.cpuUsPerRequest) / (d1.cpuUsPerRequest + d2.cpuUsPerRequest);
  console.log(
    `pdlink RSS ${f(idleS)} → ${f(s1.rssMiB)} → ${f(s2.rssMiB)} MiB; runtime sizing ${f(idleD)} → ${f(d1.rssMiB)} → ${f(d2.rssMiB)} MiB; ` +
      `bare ${f(idleB)} → ${f(b1.rssMiB)} → ${f(b2.rssMiB)} MiB; CPU ${f(s1.cpuUsPerRequest)}/${f(s2.cpuUsPerRequest)} vs ${f(d1.cpuUsPerRequest)}/${f(d2.cpuUsPerRequest)} µs per request`,
  );
  const summary = [
    `Coordinator RSS as bin/pdlink starts it (JS heap sized as for 512 MiB of RAM) after a ${INSTANCES}-instance refresh: ${f(idleS)} MiB; after ${n} proxied requests: ${f(s1.rssMiB)} MiB ` +
      `(goal ≤ 100 MiB: ${s1.rssMiB <= 100 ? 'met' : 'not met'}); after ${n} more: ${f(s2.rssMiB)} MiB (${signed(s2.rssMiB - s1.rssMiB)} MiB).`,
    `The same Coordinator with the runtime's heap sizing (BUN_JSC_forceRAMSize=0, sized for this machine's ${machine().memoryGiB} GiB) in the same run: ${f(idleD)}, ${f(d1.rssMiB)} and ${f(d2.rssMiB)} MiB (${signed(d2.rssMiB - d1.rssMiB)} MiB over the second ${n}). ` +
      `The setting's CPU cost: ${f(s1.cpuUsPerRequest)} and ${f(s2.cpuUsPerRequest)} µs of Coordinator CPU per request against ${f(d1.cpuUsPerRequest)} and ${f(d2.cpuUsPerRequest)} µs, ${times(cpuCost)} over both phases.`,
    `A bare two-leg Bun proxy on fetch under the same load: ${f(idleB)} MiB idle, ${f(b1.rssMiB)} after ${n} requests, ${f(b2.rssMiB)} after ${n} more (${signed(b2.rssMiB - b1.rssMiB)} MiB), ` +
      `${f(b1.cpuUsPerRequest)} and ${f(b2.cpuUsPerRequest)} µs CPU per request: the runtime itself grows ${f(b1.rssMiB - idleB)} MiB under this traffic, pdlink's Coordinator ${f(s1.rssMiB - idleS)} MiB (runtime sizing: ${f(d1.rssMiB - idleD)} MiB).`,
    `The JS heap is mostly garbage not yet collected: after a full collection at the end it holds ${f(heapS.after.heapMiB)} MiB (${heapS.after.objects} objects) as shipped and ${f(heapD.after.heapMiB)} MiB (${heapD.after.objects}) with the runtime's sizing, ` +
      `against ${f(heapS.before.heapMiB)} and ${f(heapD.before.heapMiB)} MiB in use before it (capacity ${f(heapS.before.heapCapacityMiB)} and ${f(heapD.before.heapCapacityMiB)} MiB); ` +
      `live objects by type after the collection: ${heapS.after.top.map(([k, v]) => `${k} ${v}`).join(', ')}. What the heap held before it is garbage not yet collected: ` +
      `${heapD.before.top.map(([k, v]) => `${k} ${v}`).join(', ')} (runtime sizing).`,
    `Streaming completions at concurrency ${CONCURRENCY}; one run, phases in the order shipped, runtime sizing, bare, bare, runtime sizing, shipped, on a 2-core VM shared with other engineers' test runs.`,
  ].join('\n\n');
  writeResults('rss', {
    json: {
      question:
        'Coordinator RSS after 4096 instances and N requests, and over N more, as shipped and with the runtime heap sizing, next to a bare Bun proxy; JS heap by type',
      instances: INSTANCES,
      requestsPerPhase: PHASE,
      concurrency: CONCURRENCY,
      order: ['shipped', 'runtime sizing', 'bare', 'bare', 'runtime sizing', 'shipped'],
      rssMiB: { afterRefresh: idleS, afterFirst: s1.rssMiB, afterSecond: s2.rssMiB },
      shipped: { env: { BUN_JSC_forceRAMSize: COORDINATOR_HEAP_RAM_BYTES }, idleMiB: idleS, first: s1, second: s2, heap: heapS },
      runtimeSizing: { env: { BUN_JSC_forceRAMSize: '0' }, idleMiB: idleD, first: d1, second: d2, heap: heapD },
      bare: { idleMiB: idleB, first: b1, second: b2 },
      cpuCostOfSetting: cpuCost,
    },
    markdownTable: markdownTable(
      ['point', 'Coordinator as shipped, MiB', 'Coordinator, runtime heap sizing, MiB', 'bare Bun proxy, MiB'],
      [
        [`idle (Coordinators: after the ${INSTANCES}-instance refresh)`, f(idleS), f(idleD), f(idleB)],
        [`after ${n} requests`, f(s1.rssMiB), f(d1.rssMiB), f(b1.rssMiB)],
        [`after ${n} more`, f(s2.rssMiB), f(d2.rssMiB), f(b2.rssMiB)],
        [
          'CPU µs per request (phases 1, 2)',
          `${f(s1.cpuUsPerRequest)}, ${f(s2.cpuUsPerRequest)}`,
          `${f(d1.cpuUsPerRequest)}, ${f(d2.cpuUsPerRequest)}`,
          `${f(b1.cpuUsPerRequest)}, ${f(b2.cpuUsPerRequest)}`,
        ],
        [
          'JS heap in use → after a full GC, MiB',
          `${f(heapS.before.heapMiB)} → ${f(heapS.after.heapMiB)}`,
          `${f(heapD.before.heapMiB)} → ${f(heapD.after.heapMiB)}`,
          '—',
        ],
      ],
    ),
    summary,
  });
} finally {
  bare.kill();
  await bare.exited;
  await shipped.cluster.stop();
  await runtimeDefault.cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
