/**
 * Question: what does mutual TLS cost a request through the PD proxy? The same cluster shape is run
 * twice: plain http, and mutual TLS everywhere (client → Coordinator, Coordinator → P and D, each
 * side presenting a certificate and verifying the other's). Same workload as proxy.bench.ts: one
 * prefill and one decode `pdlink sim-engine` with zero simulated compute, a streaming completion of a
 * 64-token prompt and 16 tokens, read to its end, sent one at a time.
 *   - added latency: p50 (p99) of the TLS cluster's latencies minus the plain one's, per round;
 *   - CPU per request: the Coordinator process's user+system CPU time (/proc/<pid>/stat) over a
 *     round divided by the requests, for each cluster.
 * The two clusters run in alternating order each round, so drift of the shared machine hits both.
 * Connections are kept alive (as a real client would), so most requests reuse a handshake.
 *
 * Run: `bun bench/proxy-tls.bench.ts`; results in bench/results/proxy-tls.*.
 */
import { readFileSync, rmSync } from 'node:fs';
import { markdownTable, percentile, spread, writeResults } from './lib.ts';
import { SimCluster } from '../src/sim/cluster.ts';
import { makeTestPki, type TestPki } from '../test/support/tls-certs.ts';

const ROUNDS = Number(process.env['PROXY_TLS_BENCH_ROUNDS'] ?? 6);
const PER_ROUND = Number(process.env['PROXY_TLS_BENCH_REQUESTS'] ?? 200);
const MODEL = 'bench-sim';
const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true });

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function round(cluster: SimCluster, n: number): Promise<{ latencies: number[]; cpuMsPerRequest: number }> {
  const pid = cluster.coordinator.child.pid!;
  const latencies: number[] = [];
  const cpuBefore = cpuSeconds(pid);
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const res = await cluster.fetch(`${cluster.proxyUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
    });
    const text = await res.text();
    if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
    latencies.push(performance.now() - start);
  }
  return { latencies, cpuMsPerRequest: ((cpuSeconds(pid) - cpuBefore) * 1000) / n };
}

const pkis: TestPki[] = [];
const engine = { prefillMsPerToken: 0, decodeMsPerToken: 0, blockTokens: 16, blockBytes: 4096 };
const plain = await SimCluster.start({ prefill: 1, decode: 1, model: MODEL, engine });
const tls = await SimCluster.start({
  prefill: 1,
  decode: 1,
  model: MODEL,
  engine,
  tls: (ips) => {
    const pki = makeTestPki(ips);
    pkis.push(pki);
    return {
      caCert: pki.caCert,
      serverCert: pki.serverCert,
      serverKey: pki.serverKey,
      clientCert: pki.clientCert,
      clientKey: pki.clientKey,
    };
  },
});
try {
  await round(plain, 50);
  await round(tls, 50);
  const added50: number[] = [];
  const added99: number[] = [];
  const cpu = { plain: [] as number[], tls: [] as number[] };
  const p50 = { plain: [] as number[], tls: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? (['plain', 'tls'] as const) : (['tls', 'plain'] as const);
    const got: Record<string, { latencies: number[]; cpuMsPerRequest: number }> = {};
    for (const mode of order) got[mode] = await round(mode === 'plain' ? plain : tls, PER_ROUND);
    const a = got['plain']!;
    const b = got['tls']!;
    added50.push(percentile(b.latencies, 50) - percentile(a.latencies, 50));
    added99.push(percentile(b.latencies, 99) - percentile(a.latencies, 99));
    p50.plain.push(percentile(a.latencies, 50));
    p50.tls.push(percentile(b.latencies, 50));
    cpu.plain.push(a.cpuMsPerRequest);
    cpu.tls.push(b.cpuMsPerRequest);
  }
  const med = (xs: number[]) => spread(xs).median;
  const rows = [
    ['plain http', med(p50.plain).toFixed(2), '—', med(cpu.plain).toFixed(3)],
    [
      'mutual TLS (client→Coordinator→engines)',
      med(p50.tls).toFixed(2),
      `${med(added50).toFixed(2)} (p99 ${med(added99).toFixed(2)})`,
      med(cpu.tls).toFixed(3),
    ],
  ];
  const table = markdownTable(['cluster', 'p50 latency (ms)', 'added by TLS (ms)', 'Coordinator CPU per request (ms)'], rows);
  const summary =
    `Mutual TLS on both proxy hops adds ${med(added50).toFixed(2)} ms at p50 (${med(added99).toFixed(2)} ms at p99) per request and ` +
    `${(med(cpu.tls) - med(cpu.plain)).toFixed(3)} ms of Coordinator CPU per request (${ROUNDS} rounds × ${PER_ROUND} sequential requests, keep-alive).`;
  writeResults('proxy-tls', {
    json: { rounds: ROUNDS, perRound: PER_ROUND, addedP50Ms: added50, addedP99Ms: added99, p50Ms: p50, coordinatorCpuMsPerRequest: cpu },
    markdownTable: table,
    summary,
  });
  console.log(table);
  console.log(summary);
} finally {
  await Promise.all([plain.stop(), tls.stop()]);
  for (const pki of pkis) rmSync(pki.dir, { recursive: true, force: true });
}
