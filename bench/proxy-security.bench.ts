/**
 * Question: what do inference API keys and mutual TLS each cost a request through the PD proxy? The
 * same cluster shape runs three times: plain http; API keys on (`pdlink.auth.api_keys_file` with 16
 * keys, the client sending one); mutual TLS everywhere (client → Coordinator, Coordinator → P and D,
 * each side presenting a certificate and verifying the other's). Same workload as proxy.bench.ts: one
 * prefill and one decode `pdlink sim-engine` with zero simulated compute, a streaming completion of a
 * 64-token prompt and 16 tokens, read to its end, sent one at a time.
 *   - added latency: p50 (p99) of a cluster's latencies minus the plain one's, per round;
 *   - CPU per request: the Coordinator process's user+system CPU time (/proc/<pid>/stat) over a
 *     round divided by the requests, for each cluster.
 * The clusters run in a rotating order each round, so drift of the shared machine hits all of them.
 * Connections are kept alive (as a real client would), so most requests reuse a handshake.
 *
 * Run: `bun bench/proxy-security.bench.ts`; results in bench/results/proxy-security.*.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable, percentile, spread, writeResults } from './lib.ts';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { makeTestPki, type TestPki } from '../test/support/tls-certs.ts';

const ROUNDS = Number(process.env['PROXY_SECURITY_BENCH_ROUNDS'] ?? 6);
const PER_ROUND = Number(process.env['PROXY_SECURITY_BENCH_REQUESTS'] ?? 200);
const MODEL = 'bench-sim';
const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true });

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function round(cluster: SimCluster, n: number, key?: string): Promise<{ latencies: number[]; cpuMsPerRequest: number }> {
  const pid = cluster.coordinator.child.pid!;
  const latencies: number[] = [];
  const cpuBefore = cpuSeconds(pid);
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const res = await cluster.fetch(`${cluster.proxyUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
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
const keyDir = mkdtempSync(join(tmpdir(), 'pdlink-bench-keys-'));
const keys = Array.from({ length: 16 }, (_, i) => `sk-bench-${i}-${crypto.randomUUID()}`);
const KEY = keys[7]!;
writeFileSync(join(keyDir, 'api-keys'), keys.join('\n') + '\n');
const plain = await SimCluster.start({ prefill: 1, decode: 1, model: MODEL, engine });
const keyed = await SimCluster.start({
  prefill: 1,
  decode: 1,
  model: MODEL,
  engine,
  coordinatorConfig: { pdlink: { auth: { api_keys_file: join(keyDir, 'api-keys') } } },
});
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
type Mode = 'plain' | 'keys' | 'tls';
const MODES: readonly Mode[] = ['plain', 'keys', 'tls'];
const clusterOf = (mode: Mode): SimCluster => (mode === 'plain' ? plain : mode === 'keys' ? keyed : tls);
const keyOf = (mode: Mode): string | undefined => (mode === 'keys' ? KEY : undefined);
try {
  for (const mode of MODES) await round(clusterOf(mode), 50, keyOf(mode));
  const added50 = { keys: [] as number[], tls: [] as number[] };
  const added99 = { keys: [] as number[], tls: [] as number[] };
  const cpu = { plain: [] as number[], keys: [] as number[], tls: [] as number[] };
  const p50 = { plain: [] as number[], keys: [] as number[], tls: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    const order = MODES.map((_, i) => MODES[(i + r) % MODES.length]!);
    const got = {} as Record<Mode, { latencies: number[]; cpuMsPerRequest: number }>;
    for (const mode of order) got[mode] = await round(clusterOf(mode), PER_ROUND, keyOf(mode));
    for (const mode of MODES) {
      p50[mode].push(percentile(got[mode].latencies, 50));
      cpu[mode].push(got[mode].cpuMsPerRequest);
    }
    for (const mode of ['keys', 'tls'] as const) {
      added50[mode].push(percentile(got[mode].latencies, 50) - percentile(got.plain.latencies, 50));
      added99[mode].push(percentile(got[mode].latencies, 99) - percentile(got.plain.latencies, 99));
    }
  }
  const med = (xs: number[]) => spread(xs).median;
  const added = (mode: 'keys' | 'tls') => `${med(added50[mode]).toFixed(2)} (p99 ${med(added99[mode]).toFixed(2)})`;
  const extraCpu = (mode: 'keys' | 'tls') => (med(cpu[mode]) - med(cpu.plain)).toFixed(3);
  const rows = [
    ['plain http', med(p50.plain).toFixed(2), '—', med(cpu.plain).toFixed(3), '—'],
    ['API keys (16 keys, one sent)', med(p50.keys).toFixed(2), added('keys'), med(cpu.keys).toFixed(3), extraCpu('keys')],
    ['mutual TLS (client→Coordinator→engines)', med(p50.tls).toFixed(2), added('tls'), med(cpu.tls).toFixed(3), extraCpu('tls')],
  ];
  const table = markdownTable(
    ['cluster', 'p50 latency (ms)', 'added vs plain (ms)', 'Coordinator CPU per request (ms)', 'added CPU (ms)'],
    rows,
  );
  const summary =
    `Against plain http in the same run (${ROUNDS} rounds × ${PER_ROUND} sequential requests, keep-alive, rotating order): ` +
    `API keys add ${med(added50.keys).toFixed(2)} ms at p50 and ${extraCpu('keys')} ms of Coordinator CPU per request; ` +
    `mutual TLS on both proxy hops adds ${med(added50.tls).toFixed(2)} ms at p50 (${med(added99.tls).toFixed(2)} ms at p99) and ${extraCpu('tls')} ms of CPU per request.`;
  writeResults('proxy-security', {
    json: { rounds: ROUNDS, perRound: PER_ROUND, addedP50Ms: added50, addedP99Ms: added99, p50Ms: p50, coordinatorCpuMsPerRequest: cpu },
    markdownTable: table,
    summary,
  });
  console.log(table);
  console.log(summary);
} finally {
  await Promise.all([plain.stop(), keyed.stop(), tls.stop()]);
  rmSync(keyDir, { recursive: true, force: true });
  for (const pki of pkis) rmSync(pki.dir, { recursive: true, force: true });
}
