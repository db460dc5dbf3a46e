/**
 * Question: how long from the 200 of `POST /v1/role/decode` to RoleReady for one decode node
 * linking 16 prefill nodes of 4 devices (64 links), through the batched pool (≤ 16 clusters per
 * runtime call) against a pool that runs one task per link, same threads, same run?
 *
 * The prefill nodes are one child process (test/fixtures/role/p-farm.ts) on 127.0.8.1–16; the
 * two decode agents live in this process on 127.0.8.100 (batched) and .101 (one task per link).
 * Each round posts the 16 peers, waits for RoleReady, then posts no peers and waits again.
 *
 * Run: bun bench/role.bench.ts   → bench/results/role.{json,md}
 */
import { createInstanceAgent, type InstanceAgent } from '../src/apps/agent.ts';
import { clusterIdFor } from '../src/links/endpoint.ts';
import { DEFAULT_POOL_THREADS } from '../src/workers/pool.ts';
import { alternate, markdownTable, percentile, spread, times, writeResults } from './lib.ts';

const NODES = 16;
const DEVICES = 4;
const ROUNDS = Number(process.env.ROLE_BENCH_ROUNDS ?? 12);
const FARM = new URL('../test/fixtures/role/p-farm.ts', import.meta.url).pathname;

const node = (ip: string) => ({
  server_ip: ip,
  device: Array.from({ length: DEVICES }, (_, d) => ({ device_ip: ip, device_logical_id: String(d) })),
});
const peers = Array.from({ length: NODES }, (_, n) => node(`127.0.8.${n + 1}`));

async function startFarm(): Promise<{ base: number; close(): Promise<void> }> {
  const child = Bun.spawn([process.execPath, FARM, String(NODES), String(DEVICES)], { stdout: 'pipe', stderr: 'inherit' });
  const reader = child.stdout.getReader();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the prefill farm exited before it was ready: ${text}`);
    text += new TextDecoder().decode(value);
    const match = /pdlink: farm ready (\d+)/.exec(text);
    if (match !== null) {
      reader.releaseLock();
      return {
        base: Number(match[1]),
        close: async () => {
          child.kill('SIGTERM');
          await child.exited;
        },
      };
    }
  }
}

async function startDecode(ip: string, base: number, maxBatch: number): Promise<InstanceAgent> {
  const devices = Array.from({ length: DEVICES }, (_, d) => ({
    endpoint: String(d),
    ip,
    port: base + d,
    clusterId: clusterIdFor(ip, base + d),
  }));
  return createInstanceAgent({ devices, linkBasePort: base, maxBatch });
}

async function post(agent: InstanceAgent, body: unknown): Promise<void> {
  const res = await agent.managementApp.request('/v1/role/decode', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`role post answered ${res.status}: ${await res.text()}`);
}

/** Milliseconds from the 200 to RoleReady with all 64 links up; then unlinks them again. */
async function roundMs(agent: InstanceAgent, local: unknown): Promise<number> {
  await post(agent, { local, peers });
  const accepted = performance.now();
  await agent.role.whenReady();
  const elapsed = performance.now() - accepted;
  const status = agent.role.status();
  if (status.linkStatus.ok !== NODES * DEVICES) throw new Error(`RoleReady with ${status.linkStatus.ok} links up`);
  await post(agent, { local, peers: [] });
  await agent.role.whenReady();
  if (agent.linkManager.list().length !== 0) throw new Error('links left after the empty post');
  return elapsed;
}

const farm = await startFarm();
const batched = await startDecode('127.0.8.100', farm.base, 16);
const perLink = await startDecode('127.0.8.101', farm.base, 1);
try {
  const localOf = (ip: string) => node(ip);
  // One warm-up round each: thread start-up and first connections are not the question.
  await roundMs(batched, localOf('127.0.8.100'));
  await roundMs(perLink, localOf('127.0.8.101'));
  const result = await alternate(
    ROUNDS,
    () => roundMs(batched, localOf('127.0.8.100')),
    () => roundMs(perLink, localOf('127.0.8.101')),
  );
  const ratio = spread(result.ratios);
  const batchedMs = percentile(result.baseline, 50);
  const perLinkMs = percentile(result.subject, 50);
  console.log(
    `200 → RoleReady, 64 links: batched ${batchedMs.toFixed(1)} ms, one task per link ${perLinkMs.toFixed(1)} ms; one-per-link / batched = ${times(ratio.median)}`,
  );
  const summary =
    `Time from the 200 of POST /v1/role/decode to RoleReady, 1 decode node × ${NODES} prefill nodes × ${DEVICES} devices (${NODES * DEVICES} links over loopback), ` +
    `${DEFAULT_POOL_THREADS} pool threads: batched pool (≤ 16 clusters per runtime call) median ${batchedMs.toFixed(1)} ms, one task per link ${perLinkMs.toFixed(1)} ms; ` +
    `the batched pool is ${times(ratio.median)} faster (median of ${ROUNDS} alternating rounds of the per-round ratio; p10 ${times(ratio.p10)}, p90 ${times(ratio.p90)}).`;
  writeResults('role', {
    json: {
      question: '200 → RoleReady for 1 D × 16 P × 4 devices: batched pool vs one task per link',
      nodes: NODES,
      devices: DEVICES,
      links: NODES * DEVICES,
      rounds: ROUNDS,
      threads: DEFAULT_POOL_THREADS,
      batchedMs: result.baseline,
      onePerLinkMs: result.subject,
      onePerLinkOverBatched: result.ratios,
      ratio,
    },
    markdownTable: markdownTable(
      ['pool', '200 → RoleReady, median ms', 'p10 ms', 'p90 ms'],
      [
        [
          'batched (≤ 16 clusters per call)',
          batchedMs.toFixed(1),
          percentile(result.baseline, 10).toFixed(1),
          percentile(result.baseline, 90).toFixed(1),
        ],
        ['one task per link', perLinkMs.toFixed(1), percentile(result.subject, 10).toFixed(1), percentile(result.subject, 90).toFixed(1)],
        ['ratio (one per link / batched)', times(ratio.median), times(ratio.p10), times(ratio.p90)],
      ],
    ),
    summary,
  });
} finally {
  await Promise.all([batched.close(), perLink.close()]);
  await farm.close();
}
