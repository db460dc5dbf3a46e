/**
 * Question: how close is the pdlink proxy's hot path to the floor of the runtime it runs on? Per
 * streamed PD request (P leg, then D's stream back), in front of the same fast fake engines
 * (proxy-engines.ts) for every mode:
 *   - CPU per request at concurrency 32, against a bare two-leg Bun proxy on `fetch`
 *     (proxy-bare-fetch.ts; goal ≤ 1.2×), the same relaying D's stream through a JS stream as pdlink
 *     must (proxy-bare-fetch.ts --relay), a bare one on pooled `Bun.connect` sockets
 *     (proxy-bare-socket.ts), and nginx (Debian's package, proxy-nginx.ts) relaying one hop (the D
 *     leg only) and two hops (the client calls P then D through it; goal ≤ 2.5×);
 *   - throughput at concurrency 32 against the direct client, which calls P then D itself with no
 *     proxy (goal ≥ 0.45×);
 *   - added latency p50/p99 at concurrency 1 over the direct client, warm (goal p99 ≤ 0.3 ms) and in
 *     a young process (the first requests of a freshly started Coordinator; goal ≤ 0.6 ms), each
 *     beside what the bare fetch proxy adds, warm and young, in the same run;
 *   - garbage per request: JS heap allocated per request, from JSC's GC log (BUN_JSC_logGC) between
 *     two forced collections, with the GCs and their longest pause, in processes of their own (the
 *     log's writes are CPU: the processes measured for CPU and latency run without it);
 *   - context switches per request at 250 requests a second (voluntary + involuntary, every thread
 *     of the proxy process, from /proc/<pid>/task/<tid>/status).
 *
 * CPU is the proxy process's time on CPU over a round, summed over its threads
 * (/proc/<pid>/task/<tid>/schedstat, ns), divided by the requests. Under load every proxy runs
 * pinned to CPU 1 and the engines to CPU 0 (taskset); the client (this process) is not pinned, and
 * latency at concurrency 1 is measured with nothing pinned. Modes run in rotating
 * order every round; every figure is the median over rounds of per-round ratios, with p10–p90.
 *
 * Run: bun bench/proxy-cpu.bench.ts   → bench/results/proxy-cpu.{json,md}
 */
import { rmSync } from 'node:fs';
import { markdownTable, percentile, spread, times, writeResults, type Spread } from './lib.ts';
import { dir, ENGINE_CPU, GC_LOG, hostOf, PROXY_CPU, startBun, startPdlink, type Host } from './proxy-cpu-hosts.ts';
import { contextSwitches, cpuByThread, cpuNs, garbageIn, jitNs, setAffinity, type Garbage, type ThreadKind } from './proxy-cpu-proc.ts';
import { ensureNginx, startNginx, type Nginx } from './proxy-nginx.ts';
import { clientPd, CONCURRENCY, concurrent, decodeOnly, paced, sequential, viaProxy, type Send } from './proxy-cpu-client.ts';

// Twelve rounds: with six, one round on a slow moment of the shared machine moved the CPU ratio's
// median by several hundredths (p10–p90 1.17–1.44x in one run of the same code).
const ROUNDS = Number(process.env['PROXY_CPU_ROUNDS'] ?? 12);
const REQUESTS = Number(process.env['PROXY_CPU_REQUESTS'] ?? 2000);
const SEQUENTIAL = Number(process.env['PROXY_CPU_SEQUENTIAL'] ?? 400);
const GARBAGE_REQUESTS = Number(process.env['PROXY_CPU_GARBAGE_REQUESTS'] ?? 5000);
const YOUNG_ROUNDS = Number(process.env['PROXY_CPU_YOUNG_ROUNDS'] ?? 3);
const YOUNG_REQUESTS = Number(process.env['PROXY_CPU_YOUNG_REQUESTS'] ?? 300);
const PACED_RATE = 250;
const PACED_REQUESTS = Number(process.env['PROXY_CPU_PACED_REQUESTS'] ?? 500);
const ALL_CPUS = '0,1';
/** Warm-up goes on in chunks of this many requests until the JIT threads use under JIT_SETTLED of a chunk's CPU. */
const WARM_CHUNK = 2000;
const JIT_SETTLED = 0.02;
const THREAD_MODES: readonly Mode[] = ['bareFetch', 'bareRelay', 'bareSocket', 'pdlink'];
const THREAD_KINDS: readonly ThreadKind[] = ['js', 'httpClient', 'jit', 'other'];
const MAX_WARM_REQUESTS = Number(process.env['PROXY_CPU_MAX_WARM'] ?? 120_000);

type Mode = 'direct' | 'nginx1' | 'nginx2' | 'bareFetch' | 'bareRelay' | 'bareSocket' | 'pdlink';
const LABELS: Record<Mode, string> = {
  direct: 'direct client (P then D, no proxy)',
  nginx1: 'nginx, one hop (D leg only)',
  nginx2: 'nginx, two hops (P and D legs)',
  bareFetch: 'bare two-leg Bun proxy on fetch',
  bareRelay: "bare two-leg Bun proxy on fetch, relaying D's stream through a JS ReadableStream",
  bareSocket: 'bare two-leg Bun proxy on Bun.connect sockets',
  pdlink: 'pdlink',
};

// ---------------------------------------------------------------- the processes

/** Per request, JS heap allocated and the collector's pauses (µs, in `pauseMs`); the GCs and the longest pause of one stretch of a process's GC log. */
async function garbagePerRequest(host: Host, send: Send): Promise<Garbage> {
  await host.gc();
  // The forced collection's line is written before its answer: the run's log starts with it.
  const log = host.proc.stderr();
  const from = log.lastIndexOf('START');
  await concurrent(send, GARBAGE_REQUESTS);
  await host.gc();
  const g = garbageIn(host.proc.stderr().slice(from - 1));
  // Per request: the bytes allocated, and the collector's pauses in µs.
  return { ...g, bytes: g.bytes / GARBAGE_REQUESTS, pauseMs: (g.pauseMs * 1000) / GARBAGE_REQUESTS };
}

/**
 * Sends requests until the process's JIT compilers have settled: two chunks in a row in which
 * they used under JIT_SETTLED of the process's CPU. "Warm" means compiled: a proxy with more code
 * takes more requests to get there (pdlink's took ≈ 40,000 against a few thousand for the bare
 * proxy), and measuring it earlier counts compilation as per-request cost. Returns the requests sent.
 */
async function warmUntilCompiled(send: Send, pid: number | undefined): Promise<number> {
  if (pid === undefined) {
    await concurrent(send, WARM_CHUNK);
    return WARM_CHUNK;
  }
  let sent = 0;
  let quiet = 0;
  while (sent < MAX_WARM_REQUESTS && quiet < 2) {
    const cpu0 = cpuNs(pid);
    const jit0 = jitNs(pid);
    await concurrent(send, WARM_CHUNK);
    sent += WARM_CHUNK;
    quiet = (jitNs(pid) - jit0) / (cpuNs(pid) - cpu0) < JIT_SETTLED ? quiet + 1 : 0;
  }
  return sent;
}

// ---------------------------------------------------------------- the run

const stops: (() => Promise<unknown>)[] = [];
try {
  const engines = await startBun('engines', 'proxy-engines.ts', [], ['prefill', 'decode']);
  stops.push(() => engines.stop());
  const pEngine = engines.urls['prefill']!;
  const dEngine = engines.urls['decode']!;
  // The processes measured for CPU run without the GC log (see the garbage measurement below).
  const bareFetch = hostOf(await startBun('bare-fetch', 'proxy-bare-fetch.ts', [pEngine, dEngine], ['proxy', 'control']), 'proxy');
  stops.push(() => bareFetch.proc.stop());
  const bareRelay = hostOf(
    await startBun('bare-relay', 'proxy-bare-fetch.ts', ['--relay', pEngine, dEngine], ['proxy', 'control']),
    'proxy',
  );
  stops.push(() => bareRelay.proc.stop());
  const bareSocket = hostOf(await startBun('bare-socket', 'proxy-bare-socket.ts', [pEngine, dEngine], ['proxy', 'control']), 'proxy');
  stops.push(() => bareSocket.proc.stop());
  const pdlink = await startPdlink(engines);
  stops.push(() => pdlink.proc.stop());
  const nginxBinary = ensureNginx();
  let nginx: Nginx | undefined;
  if (nginxBinary !== undefined) {
    nginx = await startNginx(nginxBinary, pEngine, dEngine, PROXY_CPU);
    stops.push(() => nginx!.stop());
  }

  const senders: Partial<Record<Mode, Send>> = {
    direct: clientPd(pEngine, dEngine),
    ...(nginx === undefined ? {} : { nginx1: decodeOnly(nginx.dUrl), nginx2: clientPd(nginx.pUrl, nginx.dUrl) }),
    bareFetch: viaProxy(bareFetch.url),
    bareRelay: viaProxy(bareRelay.url),
    bareSocket: viaProxy(bareSocket.url),
    pdlink: viaProxy(pdlink.url),
  };
  const pids: Partial<Record<Mode, number>> = {
    ...(nginx === undefined ? {} : { nginx1: nginx.pid, nginx2: nginx.pid }),
    bareFetch: bareFetch.proc.pid,
    bareRelay: bareRelay.proc.pid,
    bareSocket: bareSocket.proc.pid,
    pdlink: pdlink.proc.pid,
  };
  const modes = Object.keys(senders) as Mode[];
  const proxyPids = [...new Set(Object.values(pids))];
  const allPids = [...proxyPids, engines.pid];
  console.log(`modes: ${modes.join(', ')}; ${ROUNDS} rounds`);
  const warmRequests: Partial<Record<Mode, number>> = {};
  for (const mode of modes) warmRequests[mode] = await warmUntilCompiled(senders[mode]!, pids[mode]);
  console.log(`warm-up until compiled: ${modes.map((m) => `${m} ${warmRequests[m]}`).join(', ')} requests`);

  // CPU and throughput at concurrency 32.
  const cpu: Partial<Record<Mode, number[]>> = {};
  /** Share of each round's CPU spent by the JIT threads: near zero when the warm-up did its job. */
  const jitShare: Partial<Record<Mode, number[]>> = {};
  /** Where each Bun proxy's CPU goes, per request, by thread. */
  const threads: Partial<Record<Mode, Record<ThreadKind, number[]>>> = {};
  const rps: Partial<Record<Mode, number[]>> = {};
  const latency: Partial<Record<Mode, { p50: number; p99: number }[]>> = {};
  const latencyModes: Mode[] = ['direct', 'bareFetch', 'bareSocket', 'pdlink'];
  for (let round = 0; round < ROUNDS; round++) {
    const order = modes.map((_, i) => modes[(i + round) % modes.length]!);
    for (const mode of order) {
      const pid = pids[mode];
      const before = pid === undefined ? 0 : cpuNs(pid);
      const jitBefore = pid === undefined ? 0 : jitNs(pid);
      const threadsBefore = pid === undefined || !THREAD_MODES.includes(mode) ? undefined : cpuByThread(pid);
      const r = await concurrent(senders[mode]!, REQUESTS);
      (rps[mode] ??= []).push(r);
      if (pid !== undefined) {
        const used = cpuNs(pid) - before;
        (cpu[mode] ??= []).push(used / 1000 / REQUESTS);
        (jitShare[mode] ??= []).push((jitNs(pid) - jitBefore) / used);
        if (threadsBefore !== undefined) {
          const after = cpuByThread(pid);
          const split = (threads[mode] ??= { js: [], httpClient: [], jit: [], other: [] });
          for (const kind of THREAD_KINDS) split[kind].push((after[kind] - threadsBefore[kind]) / 1000 / REQUESTS);
        }
      }
    }
    // One request at a time gains nothing from pinning, and a proxy held to one core of a shared
    // machine waits for it: latency is measured with every process free to run on both cores.
    for (const pid of allPids) setAffinity(pid, ALL_CPUS);
    for (const mode of order.filter((m) => latencyModes.includes(m)).reverse()) {
      const ms = await sequential(senders[mode]!, SEQUENTIAL);
      (latency[mode] ??= []).push({ p50: percentile(ms, 50), p99: percentile(ms, 99) });
    }
    for (const pid of proxyPids) setAffinity(pid, PROXY_CPU);
    setAffinity(engines.pid, ENGINE_CPU);
    console.log(
      `round ${round + 1}: ${modes.map((m) => `${m} ${cpu[m]?.at(-1)?.toFixed(1) ?? '-'} µs ${rps[m]!.at(-1)!.toFixed(0)} req/s`).join('; ')}`,
    );
  }

  // Garbage per request: pdlink and the two bare proxies, alternating, each a process of its own
  // with JSC's GC log on. The log is written a few bytes per call, about a hundred calls per
  // collection: in the processes measured above it would have counted as CPU, the more so for the
  // proxy that collects more often.
  const garbageModes: Mode[] = ['bareFetch', 'bareSocket', 'pdlink'];
  const hosts: Partial<Record<Mode, Host>> = {
    bareFetch: hostOf(await startBun('bare-fetch-gc', 'proxy-bare-fetch.ts', [pEngine, dEngine], ['proxy', 'control'], GC_LOG), 'proxy'),
    bareSocket: hostOf(await startBun('bare-socket-gc', 'proxy-bare-socket.ts', [pEngine, dEngine], ['proxy', 'control'], GC_LOG), 'proxy'),
    pdlink: await startPdlink(engines, undefined, true),
  };
  for (const host of Object.values(hosts)) stops.push(() => host.proc.stop());
  const garbage: Partial<Record<Mode, Garbage[]>> = {};
  for (const mode of garbageModes) await warmUntilCompiled(viaProxy(hosts[mode]!.url), hosts[mode]!.proc.pid);
  for (let round = 0; round < 3; round++) {
    const order = round % 2 === 0 ? garbageModes : [...garbageModes].reverse();
    for (const mode of order) (garbage[mode] ??= []).push(await garbagePerRequest(hosts[mode]!, viaProxy(hosts[mode]!.url)));
  }

  // Context switches per request at 250 req/s.
  const switchModes = modes.filter((m) => m !== 'direct' && m !== 'nginx1');
  const switches: Partial<Record<Mode, number[]>> = {};
  for (let round = 0; round < 3; round++) {
    const order = switchModes.map((_, i) => switchModes[(i + round) % switchModes.length]!);
    for (const mode of order) {
      const before = contextSwitches(pids[mode]!);
      await paced(senders[mode]!, PACED_REQUESTS, PACED_RATE);
      (switches[mode] ??= []).push((contextSwitches(pids[mode]!) - before) / PACED_REQUESTS);
    }
  }

  // A young process: the first requests of a freshly started Coordinator, and of a freshly started
  // bare fetch proxy (the runtime's own floor: its first requests run young code too), each against
  // the direct client in the same round, the two in alternating order.
  const young: { p50: number; p99: number }[] = [];
  const youngBare: { p50: number; p99: number }[] = [];
  const youngRun = async (kind: 'pdlink' | 'bareFetch'): Promise<{ p50: number; p99: number }> => {
    const fresh =
      kind === 'pdlink'
        ? await startPdlink(engines)
        : hostOf(await startBun('bare-fetch-young', 'proxy-bare-fetch.ts', [pEngine, dEngine], ['proxy', 'control']), 'proxy');
    for (const pid of [fresh.proc.pid, engines.pid]) setAffinity(pid, ALL_CPUS);
    try {
      const ms = await sequential(viaProxy(fresh.url), YOUNG_REQUESTS);
      const floor = await sequential(senders.direct!, YOUNG_REQUESTS);
      return { p50: percentile(ms, 50) - percentile(floor, 50), p99: percentile(ms, 99) - percentile(floor, 99) };
    } finally {
      await fresh.proc.stop();
      setAffinity(engines.pid, ENGINE_CPU);
    }
  };
  for (let round = 0; round < YOUNG_ROUNDS; round++) {
    const order: ('pdlink' | 'bareFetch')[] = round % 2 === 0 ? ['pdlink', 'bareFetch'] : ['bareFetch', 'pdlink'];
    for (const kind of order) (kind === 'pdlink' ? young : youngBare).push(await youngRun(kind));
  }

  // ---------------------------------------------------------------- figures
  const ratios = (a: number[], b: number[]) => a.map((x, i) => x / b[i]!);
  const fmt = (s: Spread, digits = 2) => `${s.median.toFixed(digits)} (p10 ${s.p10.toFixed(digits)}, p90 ${s.p90.toFixed(digits)})`;
  const fmtX = (s: Spread) => `${times(s.median)} (p10 ${times(s.p10)}, p90 ${times(s.p90)})`;
  const med = (values: number[] | undefined) => (values === undefined ? Number.NaN : percentile(values, 50));
  const cpuVsBare = spread(ratios(cpu.pdlink!, cpu.bareFetch!));
  const cpuVsSocket = spread(ratios(cpu.pdlink!, cpu.bareSocket!));
  const socketVsFetch = spread(ratios(cpu.bareSocket!, cpu.bareFetch!));
  const relayVsFetch = spread(ratios(cpu.bareRelay!, cpu.bareFetch!));
  const cpuVsRelay = spread(ratios(cpu.pdlink!, cpu.bareRelay!));
  const cpuVsNginx2 = nginx === undefined ? undefined : spread(ratios(cpu.pdlink!, cpu.nginx2!));
  const rpsVsDirect = spread(ratios(rps.pdlink!, rps.direct!));
  const added = (mode: Mode, key: 'p50' | 'p99') => latency[mode]!.map((r, i) => r[key] - latency.direct![i]![key]);
  const addedP50 = spread(added('pdlink', 'p50'));
  const addedP99 = spread(added('pdlink', 'p99'));
  const youngP50 = spread(young.map((y) => y.p50));
  const youngP99 = spread(young.map((y) => y.p99));
  const bareP50 = spread(added('bareFetch', 'p50'));
  const bareP99 = spread(added('bareFetch', 'p99'));
  const youngBareP50 = spread(youngBare.map((y) => y.p50));
  const youngBareP99 = spread(youngBare.map((y) => y.p99));
  const kb = (mode: Mode) => spread(garbage[mode]!.map((g) => g.bytes / 1024));
  const gcUs = (mode: Mode) => spread(garbage[mode]!.map((g) => g.pauseMs));
  const met = (ok: boolean) => (ok ? 'met' : 'NOT MET');

  const rows: (string | number)[][] = modes.map((mode) => [
    LABELS[mode],
    cpu[mode] === undefined ? '—' : med(cpu[mode]).toFixed(1),
    cpu[mode] === undefined ? '—' : times(med(ratios(cpu[mode]!, cpu.bareFetch!))),
    med(rps[mode]).toFixed(0),
    times(med(ratios(rps[mode]!, rps.direct!))),
    latency[mode] === undefined
      ? '—'
      : `${med(latency[mode]!.map((l) => l.p50)).toFixed(3)} / ${med(latency[mode]!.map((l) => l.p99)).toFixed(3)}`,
    garbage[mode] === undefined
      ? '—'
      : `${kb(mode).median.toFixed(1)} KB, ${med(garbage[mode]!.map((g) => g.gcs))} GCs (${med(garbage[mode]!.map((g) => g.fullGcs))} full), pauses ${gcUs(mode).median.toFixed(1)} µs/request, max ${med(garbage[mode]!.map((g) => g.maxPauseMs)).toFixed(1)} ms`,
    switches[mode] === undefined ? '—' : med(switches[mode]).toFixed(2),
  ]);
  const lines = [
    `Per streamed PD request in front of the same fast fake engines, ${ROUNDS} rotating rounds of ${REQUESTS} requests at concurrency ${CONCURRENCY} and ${SEQUENTIAL} at concurrency 1 per mode; medians of per-round ratios (p10, p90).`,
    `Warm means compiled: each process was sent requests in chunks of ${WARM_CHUNK} until its JIT threads used under ${JIT_SETTLED * 100}% of a chunk's CPU twice in a row (${THREAD_MODES.map((m) => `${m} ${warmRequests[m]}`).join(', ')} requests); in the measured rounds they used ${THREAD_MODES.map((m) => `${m} ${(100 * med(jitShare[m])).toFixed(1)}%`).join(', ')} of the CPU (median).`,
    `CPU per request: pdlink ${med(cpu.pdlink).toFixed(1)} µs = ${fmtX(cpuVsBare)} the bare fetch proxy (goal ≤ 1.2×: ${met(cpuVsBare.median <= 1.2)}), ${fmtX(cpuVsSocket)} the bare Bun.connect proxy; ` +
      (cpuVsNginx2 === undefined
        ? 'nginx could not be installed: its columns were skipped.'
        : `${fmtX(cpuVsNginx2)} nginx's two hops (goal ≤ 2.5×: ${met(cpuVsNginx2.median <= 2.5)}).`),
    `The bare Bun.connect proxy spends ${fmtX(socketVsFetch)} the CPU of the bare fetch proxy. Relaying D's stream through a JS ReadableStream costs the bare fetch proxy ${fmtX(relayVsFetch)} its CPU; pdlink, which must relay so (to end a failed stream with an SSE error event and to settle the request at its end), spends ${fmtX(cpuVsRelay)} the CPU of that bare relaying proxy.`,
    `Throughput at concurrency ${CONCURRENCY}: ${fmtX(rpsVsDirect)} the direct client's (goal ≥ 0.45×: ${met(rpsVsDirect.median >= 0.45)}).`,
    `Added latency at concurrency 1, warm: p50 ${fmt(addedP50, 3)} ms, p99 ${fmt(addedP99, 3)} ms (goal p99 ≤ 0.3 ms: ${met(addedP99.median <= 0.3)}); ` +
      `the bare fetch proxy adds p50 ${fmt(bareP50, 3)} ms, p99 ${fmt(bareP99, 3)} ms in the same rounds. ` +
      `Young process (first ${YOUNG_REQUESTS} requests of a fresh process, ${YOUNG_ROUNDS} of each, alternating): pdlink adds p50 ${fmt(youngP50, 3)} ms, p99 ${fmt(youngP99, 3)} ms (goal ≤ 0.6 ms: ${met(youngP99.median <= 0.6)}); ` +
      `a young bare fetch proxy adds p50 ${fmt(youngBareP50, 3)} ms, p99 ${fmt(youngBareP99, 3)} ms.`,
    `CPU per request by thread (median µs): ${THREAD_MODES.map((m) => `${m} ${THREAD_KINDS.map((k) => `${k} ${med(threads[m]?.[k]).toFixed(1)}`).join(', ')}`).join('; ')}.`,
    `Garbage per request (JS heap allocated, JSC's GC log over ${GARBAGE_REQUESTS} requests at concurrency ${CONCURRENCY}, 3 rounds): pdlink ${fmt(kb('pdlink'), 1)} KB, bare fetch proxy ${fmt(kb('bareFetch'), 1)} KB, bare Bun.connect proxy ${fmt(kb('bareSocket'), 1)} KB. ` +
      `The JS thread stood still for the collector ${fmt(gcUs('pdlink'), 1)} µs per request in pdlink, ${fmt(gcUs('bareFetch'), 1)} µs in the bare fetch proxy, ${fmt(gcUs('bareSocket'), 1)} µs in the bare Bun.connect proxy.`,
    `Context switches per request at ${PACED_RATE} req/s (every thread, 3 rounds of ${PACED_REQUESTS}): ${switchModes.map((m) => `${m} ${med(switches[m]).toFixed(2)}`).join(', ')}.`,
    'Under load, proxies pinned to CPU 1 and engines to CPU 0, the client unpinned; latency at concurrency 1 with nothing pinned. The machine is a 2-core VM shared with other test and benchmark runs while this ran.',
  ];
  const summary = lines.join('\n\n');
  console.log(summary);
  writeResults('proxy-cpu', {
    json: {
      question: 'the proxy hot path against its floors: CPU, throughput, added latency, garbage and context switches per request',
      rounds: ROUNDS,
      requests: REQUESTS,
      sequential: SEQUENTIAL,
      concurrency: CONCURRENCY,
      pinning: { proxies: PROXY_CPU, engines: ENGINE_CPU, client: 'unpinned' },
      nginx: nginxBinary ?? null,
      cpuUs: cpu,
      warmRequests,
      jitShareOfCpu: jitShare,
      cpuUsByThread: threads,
      requestsPerSecond: rps,
      latencyMs: latency,
      young,
      youngBareFetch: youngBare,
      garbage,
      contextSwitchesPerRequest: switches,
      ratios: {
        cpuVsBareFetch: cpuVsBare,
        cpuVsBareSocket: cpuVsSocket,
        bareSocketVsBareFetch: socketVsFetch,
        bareRelayVsBareFetch: relayVsFetch,
        cpuVsBareRelay: cpuVsRelay,
        cpuVsNginxTwoHops: cpuVsNginx2 ?? null,
        throughputVsDirect: rpsVsDirect,
      },
      addedMs: { warmP50: addedP50, warmP99: addedP99, youngP50, youngP99 },
      bareFetchAddedMs: { warmP50: bareP50, warmP99: bareP99, youngP50: youngBareP50, youngP99: youngBareP99 },
    },
    markdownTable: markdownTable(
      [
        'mode',
        'CPU µs / request',
        'CPU vs bare fetch',
        `req/s at c=${CONCURRENCY}`,
        'throughput vs direct',
        'latency p50 / p99 ms (c=1)',
        'garbage / request',
        `ctx switches / request at ${PACED_RATE}/s`,
      ],
      rows,
    ),
    summary,
  });
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
