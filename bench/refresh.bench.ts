/**
 * Questions about `POST /v1/instances/refresh`, each answered as a ratio measured in one run:
 * (a) Throughput end to end through a real socket (body read, parse, validation, address checks,
 *     registry, scheduler and ledger, metrics): pdlink's management listener (its handler and
 *     its refresh route, served by the runtime seam as the Coordinator serves them) vs a raw
 *     server on the same seam and route that reads the body, `JSON.parse`s it and answers what pdlink answers (200, empty
 *     body), for 2 and 4096 instances, each with the same snapshot resent, with every instance's
 *     loads changed from one request to the next (the Controller's usual refresh, read by the loads
 *     template of refresh-loads.ts), and with every instance changed beyond its loads. Goals: 2 instances ≥ 0.9×; 4096 instances all changed
 *     ≤ 1.5× a raw parse's time (≥ 0.67× its throughput). Each server is its own process (so the
 *     floor's garbage collector does not carry pdlink's heap), both pinned to one core and the
 *     load generator to the other when `taskset` is there; rounds alternate which server goes first.
 *     Beside throughput, each round records the server's CPU time per request (all its threads,
 *     from /proc): on a machine shared with other work, throughput swings with whatever else runs,
 *     while the CPU a request costs does not, so that ratio is the steadier measure of the same gap.
 *     Before a case's rounds, each server is sent that case's requests until its JIT compiler
 *     threads have fallen quiet (a Coordinator resends for hours; compiling is a start-up cost):
 *     pdlink has far more code to compile than the raw server, and its compiler threads measured
 *     within the rounds would count as per-request CPU. Their share of each round is recorded.
 * (b) Where the time goes, in process, for the 4096-instance all-changed case: each stage of the
 *     route vs `JSON.parse` of the same text, measured alternately: the route's parse (parse +
 *     schema check), the address checks (as the route makes them: none for an instance the
 *     registry holds at the same address), and the registry apply with the Coordinator's
 *     listeners (scheduler, ledger, lost links); for loads alone, the template's read and the
 *     registry's applyLoads with the same listeners.
 *
 * Run: node_modules/.bin/bun bench/refresh.bench.ts   (add --quick for a short check that writes nothing)
 */
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { createCoordinator } from '../src/apps/coordinator.ts';
import { REFRESH_PATH } from '../src/http/refresh.ts';
import { platform } from '../src/platform/index.ts';
import { InstanceAddressPolicy } from '../src/net/address-policy.ts';
import { exampleSnapshot } from '../test/doubles/refresh-examples.ts';
import { parseRefresh, type RefreshSnapshot } from '../src/schema/refresh.ts';
import { parseRefreshText } from '../src/schema/refresh-plain.ts';
import { LoadsTemplate } from '../src/schema/refresh-loads.ts';
import {
  HTTP_CONNECTIONS,
  measured,
  type RefreshChange,
  refreshBodies,
  refreshRequest,
  sameAnswers,
  type Server,
  startRefreshServer,
  warmUntilCompiled,
} from './refresh-load.ts';
import { alternate, markdownTable, msPerCall, spread, times, writeResults } from './lib.ts';

/** `--quick`: a few short rounds to check the benchmark itself works; nothing is written. */
const QUICK = process.argv.includes('--quick');
// Many short rounds: on a shared machine, adjacent short measurements share the same load, so
// their ratio is steadier than that of long rounds far apart. A 4096-instance refresh is another
// matter: a few hundred per 500 ms round, and whether a major collection of its garbage falls in a
// round or the next moved a round's CPU by ±40% (the same code against itself: 0.72-1.41x p10-p90
// in 500 ms rounds, 0.93-1.09x in 2 s rounds). Its rounds are longer and fewer.
const HTTP_ROUNDS = QUICK ? 2 : Number(process.env.REFRESH_HTTP_ROUNDS ?? 20);
const HTTP_ROUND_MS = QUICK ? 200 : 500;
const LARGE_HTTP_ROUNDS = QUICK ? 2 : Number(process.env.REFRESH_HTTP_ROUNDS ?? 12);
const LARGE_HTTP_ROUND_MS = QUICK ? 200 : 2000;
/** Rounds and their length for a case of `size` instances. */
const roundsOf = (size: number) =>
  size > 16 ? { rounds: LARGE_HTTP_ROUNDS, roundMs: LARGE_HTTP_ROUND_MS } : { rounds: HTTP_ROUNDS, roundMs: HTTP_ROUND_MS };
/** Longest warm-up of one server for one case, waiting for its JIT compilers to settle. */
const WARM_MAX_MS = QUICK ? 2000 : 20_000;
const STAGE_ROUNDS = QUICK ? 2 : 10;
const STAGE_ROUND_MS = QUICK ? 30 : 250;
const STAGE_SIZE = 4096;

/** Cores for the servers and for the load generator, when the machine has two and taskset is there. */
const PINNED = cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0;
const SERVER_CPU = '1';
const CLIENT_CPU = '0';

/**
 * Child process: one server on an ephemeral loopback port; exits when the parent closes stdin. Both
 * are served as the Coordinator's management listener is, through the runtime seam with the
 * refresh as an exact POST route (Bun's routes): pdlink's handler is its listener's, and the raw
 * one is dispatched the same way, so the ratio is what pdlink's own work costs.
 */
async function serve(kind: string): Promise<void> {
  const coordinator = kind === 'pdlink' ? createCoordinator({ bodyLimitBytes: 8 * 1024 * 1024 }) : undefined;
  const raw = async (request: Request) => {
    JSON.parse(await request.text());
    return new Response(null, { status: 200 });
  };
  const server = platform.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: coordinator?.managementFetch ?? raw,
    posts: coordinator?.managementPosts ?? { [REFRESH_PATH]: raw },
    idleTimeoutSeconds: 180,
  });
  console.log(JSON.stringify({ port: server.port }));
  for await (const _ of Bun.stdin.stream());
  process.exit(0);
}

async function main(): Promise<void> {
  // The load generator's threads on one core, the servers on the other: neither steals the other's.
  if (PINNED) spawnSync('taskset', ['-a', '-p', '-c', CLIENT_CPU, String(process.pid)], { stdio: 'ignore' });
  const http = await benchHttp();
  const stages = await benchStages();

  const two = http.filter((h) => h.size === 2);
  const bigChanged = http.filter((h) => h.size === 4096 && h.change !== 'same');
  const pinning = PINNED ? `servers pinned to core ${SERVER_CPU}, load generator to core ${CLIENT_CPU}` : 'not pinned (no taskset)';
  const summary = [
    `(a) refresh over HTTP end to end, pdlink's management listener vs a raw server on the same platform seam and refresh route reading and parsing the same JSON and answering the same (200, empty body): ` +
      `throughput ratio (pdlink / raw; ≥ 1 is as fast) and server CPU time per request ratio (pdlink / raw; ≤ 1 is as cheap), medians with p10–p90: ` +
      http
        .map(
          (h) =>
            `${h.name} throughput ${times(h.ratio.median)} (${times(h.ratio.p10)}–${times(h.ratio.p90)}), ` +
            `CPU ${times(h.cpuRatio.median)} (${times(h.cpuRatio.p10)}–${times(h.cpuRatio.p90)})`,
        )
        .join('; ') +
      `; ${HTTP_ROUNDS} alternating rounds of ${HTTP_ROUND_MS} ms for 2 instances, ${LARGE_HTTP_ROUNDS} of ${LARGE_HTTP_ROUND_MS} ms for ${STAGE_SIZE}, ` +
      `${HTTP_CONNECTIONS} connections, ${pinning}, ` +
      `each server warmed on each case until its JIT compiler threads took under 2% of its CPU in three 500 ms chunks in a row ` +
      `or for ${WARM_MAX_MS / 1000} s (their share of pdlink's CPU in the rounds: ` +
      http.map((h) => `${(100 * h.jitShare.subject).toFixed(1)}%`).join(' / ') +
      `). ` +
      `Goals: 2 instances ≥ 0.9× throughput: ` +
      two
        .map((h) => `${h.change} ${times(h.ratio.median)} ${h.ratio.median >= 0.9 ? 'met' : 'NOT met'} (CPU ${times(h.cpuRatio.median)})`)
        .join(', ') +
      ` (≤ 1.11× CPU would match); ` +
      `4096 all changed ≤ 1.5× a raw parse's time: ` +
      bigChanged
        .map((h) => {
          const time = 1 / h.ratio.median;
          return (
            `${h.change === 'loads' ? 'loads' : 'beyond loads'} ${times(time)} by throughput, ${times(h.cpuRatio.median)} by CPU, ` +
            `${time <= 1.5 ? 'met' : 'NOT met'} by throughput, ${h.cpuRatio.median <= 1.5 ? 'met' : 'NOT met'} by CPU`
          );
        })
        .join('; ') +
      '.',
    `(b) in process, ${STAGE_SIZE} instances all changed, each stage / JSON.parse of the same text: ` +
      stages.map((r) => `${r.name} ${times(r.ratio.median)}`).join(', ') +
      `; ${STAGE_ROUNDS} alternating rounds of ${STAGE_ROUND_MS} ms.`,
    `The machine is a 2-core VM shared with other test runs while this ran.`,
  ].join('\n');
  const rows: (string | number)[][] = [];
  for (const h of http) {
    rows.push([
      `(a) HTTP, ${h.name}`,
      'req/s',
      fmt(spread(h.baseline).median, h.size > 16 ? 1 : 0),
      fmt(spread(h.subject).median, h.size > 16 ? 1 : 0),
      times(h.ratio.median),
      `${times(h.ratio.p10)}–${times(h.ratio.p90)}`,
    ]);
    rows.push([
      `    server CPU per request, ${h.name}`,
      'µs/req',
      fmt(spread(h.cpuUsPerRequest.baseline).median, 1),
      fmt(spread(h.cpuUsPerRequest.subject).median, 1),
      times(h.cpuRatio.median),
      `${times(h.cpuRatio.p10)}–${times(h.cpuRatio.p90)}`,
    ]);
  }
  for (const r of stages) {
    rows.push([
      `(b) ${r.name}, ${STAGE_SIZE}`,
      'ms/op',
      fmt(r.parseMs, 4),
      fmt(r.stageMs, 4),
      times(r.ratio.median),
      `${times(r.ratio.p10)}–${times(r.ratio.p90)}`,
    ]);
  }
  const table = markdownTable(['measurement', 'unit', 'baseline (median)', 'subject (median)', 'ratio (median)', 'ratio p10–p90'], rows);
  console.log(`${summary}\n\n${table}`);
  if (QUICK) return;
  writeResults('refresh', {
    summary,
    markdownTable: table,
    json: {
      http: {
        rounds: HTTP_ROUNDS,
        roundMs: HTTP_ROUND_MS,
        largeRounds: LARGE_HTTP_ROUNDS,
        largeRoundMs: LARGE_HTTP_ROUND_MS,
        connections: HTTP_CONNECTIONS,
        pinned: PINNED,
        cases: http,
      },
      stages: { rounds: STAGE_ROUNDS, roundMs: STAGE_ROUND_MS, size: STAGE_SIZE, stages },
    },
  });
}

const fmt = (x: number, digits = 0) => x.toFixed(digits);

// ---- (a) HTTP throughput --------------------------------------------------------------------

/**
 * The HTTP cases: a snapshot resent as it is, or two snapshots alternated that differ in every
 * instance: in its loads alone (read by the loads template after the first), or beyond them (each
 * parsed, checked and applied whole). See RefreshChange.
 */
const HTTP_CASES: readonly { name: string; size: number; change: RefreshChange }[] = [
  { name: '2 instances, same', size: 2, change: 'same' },
  { name: '2 instances, all loads changed', size: 2, change: 'loads' },
  { name: '2 instances, all changed beyond loads', size: 2, change: 'whole' },
  { name: '4096 instances, same', size: 4096, change: 'same' },
  { name: '4096 instances, all loads changed', size: 4096, change: 'loads' },
  { name: '4096 instances, all changed beyond loads', size: 4096, change: 'whole' },
];

async function benchHttp() {
  const raw = await startServer('raw');
  const pdlink = await startServer('pdlink');
  try {
    await sameAnswers(raw.port, pdlink.port);
    const results = [];
    for (const c of HTTP_CASES) {
      const bodies = refreshBodies(c.size, c.change);
      const rawRequests = bodies.map((b) => refreshRequest(raw.port, b));
      const pdlinkRequests = bodies.map((b) => refreshRequest(pdlink.port, b));
      // Each case has code paths of its own (a changed snapshot is diffed, a resent one is not):
      // both servers are warmed on this case's requests until their compilers have settled.
      const warmRequests = {
        baseline: await warmUntilCompiled(raw, rawRequests, WARM_MAX_MS),
        subject: await warmUntilCompiled(pdlink, pdlinkRequests, WARM_MAX_MS),
      };
      // Throughput per round, and beside it the server's CPU time per request in the same round.
      const cpu = { baseline: [] as number[], subject: [] as number[] };
      const jit = { baseline: [] as number[], subject: [] as number[] };
      const { rounds, roundMs } = roundsOf(c.size);
      const r = await alternate(
        rounds,
        () => measured(raw, rawRequests, cpu.baseline, roundMs, jit.baseline),
        () => measured(pdlink, pdlinkRequests, cpu.subject, roundMs, jit.subject),
      );
      const ratio = spread(r.ratios);
      const cpuRatios = cpu.subject.map((x, i) => x / cpu.baseline[i]!);
      const cpuRatio = spread(cpuRatios);
      console.log(
        `${c.name}: warmed ${warmRequests.baseline} / ${warmRequests.subject} requests (raw / pdlink); throughput ${times(ratio.median)} (p10 ${times(ratio.p10)}, p90 ${times(ratio.p90)}); ` +
          `CPU per request ${times(cpuRatio.median)} (p10 ${times(cpuRatio.p10)}, p90 ${times(cpuRatio.p90)})`,
      );
      results.push({
        ...c,
        bodyBytes: Buffer.byteLength(bodies[0]!),
        baseline: r.baseline,
        subject: r.subject,
        ratios: r.ratios,
        ratio,
        cpuUsPerRequest: cpu,
        cpuRatios,
        cpuRatio,
        warmRequests,
        jitShare: { baseline: spread(jit.baseline).median, subject: spread(jit.subject).median },
      });
    }
    return results;
  } finally {
    await raw.stop();
    await pdlink.stop();
  }
}

/** Starts one server process (pinned to the servers' core when possible) and waits for its port. */
function startServer(kind: 'raw' | 'pdlink'): Promise<Server> {
  return startRefreshServer(import.meta.path, kind, PINNED ? SERVER_CPU : undefined);
}

// ---- (b) where the time goes, in process --------------------------------------------------

async function benchStages() {
  // Two snapshots differing in every instance's free slots, applied in turn: each apply updates all.
  const texts = [JSON.stringify(exampleSnapshot(STAGE_SIZE)), JSON.stringify(exampleSnapshot(STAGE_SIZE, { load: 1 }))];
  const parsed = texts.map((t) => parseRefreshText(t));
  const snapshots = parsed.map((p) => parseRefresh(p));
  const coordinator = createCoordinator({ bodyLimitBytes: 8 * 1024 * 1024 });
  const policy = new InstanceAddressPolicy(undefined);
  // The registry holds the first snapshot, as it does between two refreshes.
  coordinator.registry.apply(snapshots[0]!);
  const template = LoadsTemplate.of(texts[0]!, snapshots[0]!)!;
  const loads = texts.map((t) => template.read(t)!);
  let turn = 0;
  const parse = () => msPerCall(() => JSON.parse(texts[turn++ & 1]!), STAGE_ROUND_MS);
  const stageCalls: { name: string; call: () => unknown }[] = [
    { name: 'route parse + schema check', call: () => parseRefresh(parseRefreshText(texts[turn++ & 1]!)) },
    {
      // As the route makes them: an instance the registry holds at the same address is not asked about again.
      name: 'address checks',
      call: () => {
        for (const instance of (snapshots[turn++ & 1] as RefreshSnapshot).instances) {
          const held = coordinator.registry.get(instance.id);
          if (held === undefined || !held.isAt(instance.ip, instance.port)) policy.refusal(instance.ip, instance.port);
        }
      },
    },
    { name: 'registry apply + scheduler + ledger', call: () => coordinator.registry.apply(snapshots[turn++ & 1]!) },
    // The same two texts as a Controller's refreshes that moved only loads, as the route takes them.
    {
      // Once per stretch of moved loads: after the first apply that moved only loads.
      name: 'loads template made from the text',
      call: () => {
        const i = turn++ & 1;
        return LoadsTemplate.of(texts[i]!, snapshots[i]!);
      },
    },
    { name: 'loads read by the template', call: () => template.read(texts[turn++ & 1]!) },
    { name: 'registry applyLoads + scheduler + ledger', call: () => coordinator.registry.applyLoads(loads[turn++ & 1]!) },
  ];
  const results = [];
  for (const { name, call } of stageCalls) {
    // Warm-up: the first apply adds every instance (not the case measured), and the JIT settles.
    msPerCall(call, 300);
    parse();
    const run = await alternate(STAGE_ROUNDS, parse, () => msPerCall(call, STAGE_ROUND_MS));
    const median = (xs: number[]) => spread(xs).median;
    results.push({ name, parseMs: median(run.baseline), stageMs: median(run.subject), ratio: spread(run.ratios), ratios: run.ratios });
  }
  await coordinator.close();
  return results;
}

// Last, so every constant above is initialised when it runs.
if (process.argv[2] === 'serve') await serve(process.argv[3] ?? 'raw');
else await main();
