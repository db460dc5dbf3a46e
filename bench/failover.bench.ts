/**
 * Question: how long does a failover take on etcd with pdlink's 2 s lease, against MindIE's 10 s
 * master lock, and what does a killed Coordinator cost the clients in active/active?
 *
 * Two clusters alive at once, one per lease TTL, each: 1 P + 1 D (simulated), two Coordinators,
 * two controllers, one etcd, a steady load of 2 clients. Rounds alternate which cluster goes
 * first (ABBA). Per round and cluster:
 * - master/standby: kill -9 the leader controller, time until the other reports itself leader
 *   and until a Coordinator's generation moves again (its first snapshot); restart the killed
 *   one. Then kill -9 the master Coordinator, time until the standby's readiness is 200; restart.
 * - active/active: kill -9 one Coordinator, count the client requests that fail (the clients move
 *   on a refused connection, as a load balancer does), time until every client has had an answer
 *   again; restart it.
 * `BENCH_ROUNDS` kills per mode and TTL (default 20).
 */
import { HaCluster, HaLoad, when, type HaMode } from '../test/support/ha-cluster.ts';
import { markdownTable, percentile, writeResults } from './lib.ts';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 20);
const TTLS = [2, 10] as const;
const DEADLINE_MS = 60_000;

interface Samples {
  controllerLeader: number[];
  controllerSnapshot: number[];
  masterReady: number[];
  activeFailed: number[];
  activeServedAgain: number[];
}

const samples: Record<number, Samples> = Object.fromEntries(
  TTLS.map((ttl) => [ttl, { controllerLeader: [], controllerSnapshot: [], masterReady: [], activeFailed: [], activeServedAgain: [] }]),
);

async function leaderIndex(ha: HaCluster): Promise<number | undefined> {
  const views = await ha.leadership();
  const leaders = views.flatMap((v, i) => (v?.state === 'leader' ? [i] : []));
  return leaders.length === 1 ? leaders[0] : undefined;
}

async function masterIndex(ha: HaCluster): Promise<number | undefined> {
  const ready = [(await ha.readiness(0)).status, (await ha.readiness(1)).status].flatMap((s, i) => (s === 200 ? [i] : []));
  return ready.length === 1 ? ready[0] : undefined;
}

async function controllerKill(ha: HaCluster, out: Samples): Promise<void> {
  await ha.leader(DEADLINE_MS);
  const first = (await leaderIndex(ha))!;
  const generation = (await ha.generation(0))!;
  const killedAt = Date.now();
  await ha.controllers[first]!.stop('SIGKILL');
  const ledAt = await when(async () => (await ha.leadership())[1 - first]?.state === 'leader', 'new leader', DEADLINE_MS);
  // A push in flight at the kill may still land: the new leader's first is the one after that.
  const landed = (await ha.generation(0))!;
  const pushedAt = await when(
    async () => ((await ha.generation(0)) ?? 0) > Math.max(landed, generation + 1),
    'first snapshot',
    DEADLINE_MS,
  );
  out.controllerLeader.push(ledAt - killedAt);
  out.controllerSnapshot.push(pushedAt - killedAt);
  await ha.restartController(first);
}

async function masterKill(ha: HaCluster, out: Samples): Promise<void> {
  let m: number | undefined;
  await when(async () => (m = await masterIndex(ha)) !== undefined, 'one master', DEADLINE_MS);
  const killedAt = Date.now();
  await ha.coordinators[m!]!.stop('SIGKILL');
  const readyAt = await when(async () => (await ha.readiness(1 - m!)).status === 200, 'standby ready', DEADLINE_MS);
  out.masterReady.push(readyAt - killedAt);
  await ha.restartCoordinator(m!);
}

async function activeKill(ha: HaCluster, load: HaLoad, out: Samples, victim: number): Promise<void> {
  // Steady state first: every instance serving, both Coordinators ready, the load answered.
  await ha.leader(DEADLINE_MS);
  await when(async () => (await ha.readiness(0)).status === 200 && (await ha.readiness(1)).status === 200, 'both ready', DEADLINE_MS);
  const settledAt = Date.now();
  await when(async () => load.outcomes.filter((o) => o.startedAt > settledAt && o.status === 200).length >= 10, 'load served', DEADLINE_MS);
  const from = load.outcomes.length;
  const killedAt = Date.now();
  await ha.coordinators[victim]!.stop('SIGKILL');
  // Served again: two answers (one per client) started after the kill.
  const servedAt = await when(
    async () => load.outcomes.filter((o) => o.startedAt > killedAt && o.status === 200).length >= 2,
    'served again',
    DEADLINE_MS,
  );
  await load.more(10);
  out.activeFailed.push(load.outcomes.slice(from).filter((o) => o.status !== 200).length);
  out.activeServedAgain.push(servedAt - killedAt);
  await ha.restartCoordinator(victim);
  await when(async () => (await ha.readiness(victim)).status === 200, 'restarted Coordinator ready', DEADLINE_MS);
}

async function phase(mode: HaMode): Promise<void> {
  const clusters = await Promise.all(TTLS.map((ttl) => HaCluster.start({ mode, ttlSeconds: ttl })));
  const loads = clusters.map((ha) => new HaLoad(ha, 2, mode === 'active_active' ? [0, 1] : [0, 1], mode === 'active_active'));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const c of order) {
        const ha = clusters[c]!;
        const out = samples[TTLS[c]!]!;
        if (mode === 'master_standby') {
          await controllerKill(ha, out);
          await masterKill(ha, out);
        } else {
          await activeKill(ha, loads[c]!, out, round % 2);
        }
      }
      console.log(`${mode} round ${round + 1}/${ROUNDS} done`);
    }
  } finally {
    await Promise.all(loads.map((l) => l.stop()));
    await Promise.all(clusters.map((ha) => ha.stop()));
  }
}

await phase('master_standby');
await phase('active_active');

const stat = (xs: number[]) => ({ n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), max: Math.max(...xs) });
const row = (label: string, key: keyof Samples, unit: string): (string | number)[] => {
  const a = stat(samples[2]![key]);
  const b = stat(samples[10]![key]);
  const f = (x: number) => (unit === 'ms' ? Math.round(x) : Number(x.toFixed(1)));
  return [label, a.n, f(a.p50), f(a.p99), f(b.p50), f(b.p99)];
};
const table = markdownTable(
  ['failover (kill -9 under load)', 'kills per TTL', 'lease 2 s p50', 'lease 2 s p99', 'lease 10 s p50', 'lease 10 s p99'],
  [
    row('leader controller → the other leads, ms', 'controllerLeader', 'ms'),
    row('leader controller → first snapshot of the new leader, ms', 'controllerSnapshot', 'ms'),
    row('master Coordinator → standby ready, ms', 'masterReady', 'ms'),
    row('active/active Coordinator → every client answered again, ms', 'activeServedAgain', 'ms'),
    row('active/active Coordinator → failed requests per kill', 'activeFailed', 'n'),
  ],
);
const s2 = { ctl: stat(samples[2]!.controllerSnapshot), ms: stat(samples[2]!.masterReady) };
const s10 = { ctl: stat(samples[10]!.controllerSnapshot), ms: stat(samples[10]!.masterReady) };
const summary =
  `${ROUNDS} kills per mode and lease TTL, alternating between two live clusters. With the 2 s lease a new controller ` +
  `leader sends its first snapshot ${Math.round(s2.ctl.p50)} ms after kill -9 of the old one (p99 ${Math.round(s2.ctl.p99)} ms) ` +
  `and a standby Coordinator is ready ${Math.round(s2.ms.p50)} ms after kill -9 of the master (p99 ${Math.round(s2.ms.p99)} ms); ` +
  `with MindIE's 10 s: ${Math.round(s10.ctl.p50)} / ${Math.round(s10.ms.p50)} ms (p99 ${Math.round(s10.ctl.p99)} / ${Math.round(s10.ms.p99)}). ` +
  `In active/active no lock is involved: a kill fails only the requests in flight on the killed Coordinator ` +
  `(p50 ${stat(samples[2]!.activeFailed).p50} per kill with 2 clients).`;
writeResults('failover', { json: { rounds: ROUNDS, ttls: TTLS, samples }, markdownTable: table, summary });
console.log(summary);
console.log(table);
process.exit(0);
