/**
 * Question: how fast does `pdlink controller` take a dead instance out of the Coordinator's
 * snapshot and a restarted one back in, how many client requests fail per fault, and what does
 * one period cost at MindIE's 4096-instance cap?
 *
 * Part 1 (simulated cluster, 2 P + 2 D + Coordinator, steady load of 4 clients): kill -9 a decoder,
 * time until the Coordinator no longer holds it; restart it, time from its listening line until the
 * Coordinator holds it again and until it takes a request; count failed requests from the kill until
 * it takes requests again. pdlink's short timings (heartbeat 1 s, sync 0.2 s, retry 0.5 s, poll
 * 0.1 s) against MindIE's defaults (heartbeat 5 s, sync 1 s, role retry 5 s; polled every 1 s) in
 * alternating rounds of one run, each with its own controller process on the same cluster.
 *
 * Part 2 (in process, fake agents that answer at once): 4096 instances (2048 P, 2048 D, 256 groups of
 * 16), every one serving; the cost of one period (4096 status answers read, one evaluation, the
 * snapshot composed) against the baseline of serialising and parsing that snapshot once.
 */
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { startSimController } from '../src/sim/cluster/controller.ts';
import { until } from '../src/sim/cluster/process.ts';
import { Controller } from '../src/controller/controller.ts';
import type { Outgoing, OutgoingReply } from '../src/controller/outgoing.ts';
import { DEFAULT_TIMING, type DesiredInstance } from '../src/controller/types.ts';
import { alternate, markdownTable, msPerCall, spread, times, writeResults } from './lib.ts';

/** Rounds per config; each kills and restarts a simulated engine process, so few. */
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 2);
const CONFIGS = {
  pdlink: {
    cluster_synchronization_seconds: 0.2,
    role_retry_seconds: 0.5,
    instance_heartbeat_timeout_seconds: 1,
    status_poll_seconds: 0.1,
    drain_timeout_seconds: 10,
  },
  mindie: {
    cluster_synchronization_seconds: 1,
    role_retry_seconds: 5,
    instance_heartbeat_timeout_seconds: 5,
    status_poll_seconds: 1,
    drain_timeout_seconds: 10,
  },
} as const;
type ConfigName = keyof typeof CONFIGS;

interface FaultRound {
  config: ConfigName;
  killToLeftMs: number;
  restartToSnapshotMs: number;
  restartToServingMs: number;
  failed: number;
  sent: number;
}

async function held(cluster: SimCluster): Promise<number[]> {
  try {
    const view = (await (await fetch(`${cluster.coordinatorUrl}/v1/instances`)).json()) as { instances: { id: number }[] };
    return view.instances.map((i) => i.id);
  } catch {
    return [];
  }
}

async function when(probe: () => Promise<boolean>, what: string, deadlineMs = 90_000): Promise<number> {
  await until(
    async () => ((await probe()) ? true : undefined),
    deadlineMs,
    () => what,
    10,
  );
  return performance.now();
}

function load(cluster: SimCluster, clients: number): { stop(): Promise<{ at: number; ok: boolean }[]> } {
  const outcomes: { at: number; ok: boolean }[] = [];
  let running = true;
  let seq = 0;
  const client = async (): Promise<void> => {
    while (running) {
      const at = performance.now();
      const id = `bench-${++seq}`;
      let ok = false;
      try {
        const res = await fetch(`${cluster.proxyUrl}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': id },
          body: JSON.stringify({ model: cluster.model, prompt: `bench ${id} `.repeat(8), max_tokens: 4 }),
        });
        await res.arrayBuffer();
        ok = res.status === 200;
      } catch {
        // Counted as failed.
      }
      outcomes.push({ at, ok });
    }
  };
  const all = Array.from({ length: clients }, client);
  return {
    async stop() {
      running = false;
      await Promise.all(all);
      return outcomes;
    },
  };
}

async function faultRound(cluster: SimCluster, config: ConfigName): Promise<FaultRound> {
  const controller = await startSimController(cluster, cluster.engines, CONFIGS[config]);
  try {
    const ids = cluster.engines.map((e) => e.id).sort((a, b) => a - b);
    await when(async () => (await held(cluster)).sort((a, b) => a - b).join() === ids.join(), 'cluster wired');
    const d1 = cluster.engine('d1');
    const decodes = async () => (await cluster.simStatus('d1')).requests['decode']!;
    const traffic = load(cluster, 4);
    // The victim must be taking requests when it dies, or the fault costs nothing.
    const before = await decodes();
    await when(async () => (await decodes()) > before + 3, 'd1 serving before the kill');
    const killedAt = performance.now();
    await d1.process.stop('SIGKILL');
    const leftAt = await when(async () => !(await held(cluster)).includes(d1.id), 'd1 left');
    await cluster.restart('d1', { wire: false });
    const answeringAt = performance.now();
    const backAt = await when(async () => (await held(cluster)).includes(d1.id), 'd1 back');
    const servingAt = await when(async () => (await decodes()) > 0, 'd1 serving again');
    const outcomes = await traffic.stop();
    const window = outcomes.filter((o) => o.at >= killedAt && o.at <= servingAt);
    return {
      config,
      killToLeftMs: leftAt - killedAt,
      restartToSnapshotMs: backAt - answeringAt,
      restartToServingMs: servingAt - answeringAt,
      failed: window.filter((o) => !o.ok).length,
      sent: window.length,
    };
  } finally {
    await controller.process.stop();
  }
}

// ---- Part 2: cost of one period at 4096 instances.

class InstantAgents implements Outgoing {
  readonly #peersOf = new Map<string, string[]>();
  async get(url: string): Promise<OutgoingReply> {
    const u = new URL(url);
    if (u.pathname === '/v1/readiness') return { status: 200, body: {} };
    const peers = (this.#peersOf.get(u.hostname) ?? []).map((target) => ({ target, device: 0, link: 'ok' }));
    return {
      status: 200,
      body: {
        service: { roleStatus: 'RoleReady', currentRole: this.#roleOf.get(u.hostname) ?? 'none', queuedPosts: 0 },
        linkStatus: { peers },
        resource: { totalSlotsNum: 200, availSlotsNum: 150, totalBlockNum: 1024, availBlockNum: 700 },
      },
    };
  }
  readonly #roleOf = new Map<string, string>();
  async post(url: string, body: unknown): Promise<OutgoingReply> {
    const u = new URL(url);
    // The real client serialises the snapshot; so does this one, so the cost is counted.
    if (u.pathname === '/v1/instances/refresh') return { status: JSON.stringify(body).length > 0 ? 200 : 400, body: undefined };
    this.#roleOf.set(u.hostname, u.pathname.split('/').at(-1)!);
    this.#peersOf.set(
      u.hostname,
      (body as { peers: { server_ip: string }[] }).peers.map((p) => p.server_ip),
    );
    return { status: 200, body: { result: 'OK' } };
  }
}

/** Status polls per synchronization period at the default timings (0.25 s polls, 1 s period). */
const POLLS_PER_PERIOD = DEFAULT_TIMING.syncMs / DEFAULT_TIMING.statusPollMs;

async function periodCost(
  n: number,
): Promise<{ periodMs: number[]; baselineMs: number[]; evaluateMs: number; jsonRoundTripMs: number; snapshotBytes: number }> {
  const ip = (i: number) => `10.${(i >> 8) & 255}.${i & 255}.1`;
  const instances: DesiredInstance[] = Array.from({ length: n }, (_, i) => ({
    id: i,
    manageUrl: `http://${ip(i)}:2000`,
    inferenceUrl: `http://${ip(i)}:3000`,
    modelName: 'm',
    serverIp: ip(i),
    devices: [{ logicalId: '0', ip: ip(i) }],
    role: i < n / 2 ? 'prefill' : 'decode',
    staticInfo: { maxSeqLen: 4096, maxOutputLen: 1024, totalSlots: 200, totalBlocks: 1024, blockSize: 16 },
  }));
  const agents = new InstantAgents();
  const controller = new Controller({
    spec: { coordinators: ['http://127.0.0.1:1'], timing: DEFAULT_TIMING, rates: { p: 0, d: 0 }, instances },
    client: agents,
  });
  const flush = async (): Promise<void> => {
    for (let i = 0; i < 4; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  for (let i = 0; i < 20 && controller.snapshot().ids.length < n; i++) {
    controller.tick();
    await flush();
  }
  if (controller.snapshot().ids.length !== n) throw new Error(`only ${controller.snapshot().ids.length} of ${n} serving`);
  // One period: its poll rounds (each: 4096 answers read, one evaluation) and one snapshot composed and sent.
  const period = async (): Promise<number> => {
    const t0 = performance.now();
    for (let p = 0; p < POLLS_PER_PERIOD; p++) {
      controller.tick();
      await flush();
    }
    await controller.sync();
    return performance.now() - t0;
  };
  // Baseline: the same calls answered and the same snapshot serialised, with no controller logic.
  const urls = instances.map((i) => `${i.manageUrl}/v1/status`);
  const bare = async (): Promise<number> => {
    const t0 = performance.now();
    for (let p = 0; p < POLLS_PER_PERIOD; p++) await Promise.all(urls.map((u) => agents.get(u)));
    JSON.stringify(controller.snapshot());
    return performance.now() - t0;
  };
  for (let i = 0; i < 3; i++) await alternate(1, bare, period);
  const measured = await alternate(12, bare, period);
  const evaluateMs = msPerCall(() => controller.evaluate(), 500);
  const snapshot = controller.snapshot();
  const text = JSON.stringify(snapshot);
  const jsonRoundTripMs = msPerCall(() => JSON.parse(JSON.stringify(snapshot)), 500);
  await controller.close();
  return { periodMs: measured.subject, baselineMs: measured.baseline, evaluateMs, jsonRoundTripMs, snapshotBytes: text.length };
}

const cluster = await SimCluster.start({ prefill: 2, decode: 2, wire: false, engine: { decodeMsPerToken: 1 } });
const rounds: FaultRound[] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    // ABBA, so drift in the machine's load hits both alike.
    const order: ConfigName[] = r % 2 === 0 ? ['pdlink', 'mindie'] : ['mindie', 'pdlink'];
    for (const config of order) {
      const round = await faultRound(cluster, config);
      rounds.push(round);
      console.log(JSON.stringify(round));
    }
  }
} finally {
  await cluster.stop();
}
const cost = await periodCost(4096);
console.log(JSON.stringify({ ...cost, periodMs: spread(cost.periodMs), baselineMs: spread(cost.baselineMs) }));

const of = (config: ConfigName, key: keyof Omit<FaultRound, 'config'>) =>
  spread(rounds.filter((r) => r.config === config).map((r) => r[key] as number));
const figures = (config: ConfigName) => ({
  killToLeftMs: of(config, 'killToLeftMs'),
  restartToSnapshotMs: of(config, 'restartToSnapshotMs'),
  restartToServingMs: of(config, 'restartToServingMs'),
  failedPerFault: of(config, 'failed'),
  sentPerFault: of(config, 'sent'),
});
const pd = figures('pdlink');
const mi = figures('mindie');
const ratio = (a: number, b: number) => times(b / a);
const period = spread(cost.periodMs);
const bareSpread = spread(cost.baselineMs);
const overhead = spread(cost.periodMs.map((p, i) => p / cost.baselineMs[i]!));
const table = markdownTable(
  ['figure (median of rounds)', 'pdlink timings', "MindIE's defaults", 'MindIE / pdlink'],
  [
    [
      'kill -9 → out of the snapshot, ms',
      pd.killToLeftMs.median.toFixed(0),
      mi.killToLeftMs.median.toFixed(0),
      ratio(pd.killToLeftMs.median, mi.killToLeftMs.median),
    ],
    [
      'restart (listening) → in the snapshot, ms',
      pd.restartToSnapshotMs.median.toFixed(0),
      mi.restartToSnapshotMs.median.toFixed(0),
      ratio(pd.restartToSnapshotMs.median, mi.restartToSnapshotMs.median),
    ],
    [
      'restart (listening) → takes a request, ms',
      pd.restartToServingMs.median.toFixed(0),
      mi.restartToServingMs.median.toFixed(0),
      ratio(pd.restartToServingMs.median, mi.restartToServingMs.median),
    ],
    [
      'failed requests per fault (kill → serving again)',
      pd.failedPerFault.median.toFixed(1),
      mi.failedPerFault.median.toFixed(1),
      ratio(Math.max(pd.failedPerFault.median, 0.5), mi.failedPerFault.median),
    ],
    ['requests sent in that window', pd.sentPerFault.median.toFixed(0), mi.sentPerFault.median.toFixed(0), ''],
  ],
);
const costTable = markdownTable(
  ['4096 instances, fake agents', 'median ms', 'p10 ms', 'p90 ms'],
  [
    [
      `one 1 s period: ${POLLS_PER_PERIOD} poll rounds (4096 answers read, one evaluation each), one snapshot composed and sent`,
      period.median.toFixed(1),
      period.p10.toFixed(1),
      period.p90.toFixed(1),
    ],
    [
      `baseline: the same ${POLLS_PER_PERIOD}×4096 answers and one snapshot serialised, no controller logic`,
      bareSpread.median.toFixed(1),
      bareSpread.p10.toFixed(1),
      bareSpread.p90.toFixed(1),
    ],
    ['ratio period / baseline (per round)', times(overhead.median), times(overhead.p10), times(overhead.p90)],
    ['one evaluation with nothing changed (heartbeats, readiness, posts due)', cost.evaluateMs.toFixed(2), '', ''],
    ['JSON.stringify + JSON.parse of the snapshot', cost.jsonRoundTripMs.toFixed(2), '', ''],
  ],
);
const summary =
  `Simulated 2 P + 2 D under 4 clients, ${ROUNDS} alternating rounds per config: a killed decoder leaves the Coordinator's snapshot after ` +
  `${pd.killToLeftMs.median.toFixed(0)} ms with pdlink's timings vs ${mi.killToLeftMs.median.toFixed(0)} ms with MindIE's defaults (${ratio(pd.killToLeftMs.median, mi.killToLeftMs.median)}); ` +
  `restarted, it is back in the snapshot ${pd.restartToSnapshotMs.median.toFixed(0)} ms vs ${mi.restartToSnapshotMs.median.toFixed(0)} ms after listening; ` +
  `failed requests per fault ${pd.failedPerFault.median.toFixed(1)} vs ${mi.failedPerFault.median.toFixed(1)} ` +
  `(requests in flight to the dead engine; the Coordinator's retries and circuit breaker keep the rest from failing). ` +
  `Restarted, it takes a request ${pd.restartToServingMs.median.toFixed(0)} ms vs ${mi.restartToServingMs.median.toFixed(0)} ms after listening: the refresh that lists it again gives its open circuit a trial at once. ` +
  `At 4096 instances (${(cost.snapshotBytes / 1024).toFixed(0)} KiB snapshot) one 1 s period costs ${period.median.toFixed(0)} ms of the controller's thread, ` +
  `${times(overhead.median)} the bare answers and serialisation it cannot avoid (${bareSpread.median.toFixed(0)} ms); an evaluation with nothing changed costs ${cost.evaluateMs.toFixed(1)} ms.`;
writeResults('controller', {
  json: {
    rounds,
    pdlink: pd,
    mindie: mi,
    timings: CONFIGS,
    periodCost4096: { ...cost, periodMs: period, baselineMs: bareSpread, ratio: overhead },
  },
  markdownTable: `${table}\n\n${costTable}`,
  summary,
});
console.log(summary);
process.exit(0);
