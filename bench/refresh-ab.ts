/**
 * Same-run A/B of two refresh servers: server CPU per refresh over HTTP, the two processes measured
 * in alternating rounds with the refresh benchmark's load generator. A server is a script started
 * as `<script> serve <kind>`, as bench/refresh.bench.ts starts its own (`pdlink` or `raw`); to
 * compare a change with the code before it, point A at another checkout's refresh.bench.ts.
 *
 * Run: bun bench/refresh-ab.ts <A script> <A kind> <B script> <B kind> [2|4096] [rounds] [loads|whole|same] [round ms]
 *   e.g. bun bench/refresh-ab.ts /tmp/before/bench/refresh.bench.ts pdlink bench/refresh.bench.ts pdlink 2 14
 *   (a 4096-instance case wants rounds of 2000 ms: see refresh.bench.ts)
 */
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { spread, times } from './lib.ts';
import { measured, type RefreshChange, refreshBodies, refreshRequest, startRefreshServer, warmUntilCompiled } from './refresh-load.ts';

const [aScript, aKind, bScript, bKind] = process.argv.slice(2, 6);
if (aScript === undefined || aKind === undefined || bScript === undefined || bKind === undefined) {
  console.error('usage: bun bench/refresh-ab.ts <A script> <A kind> <B script> <B kind> [2|4096] [rounds] [loads|whole|same] [round ms]');
  process.exit(2);
}
const size = Number(process.argv[6] ?? 2);
const rounds = Number(process.argv[7] ?? 12);
// `changed`, the name the all-loads-changed case had before the change beyond loads was a case of
// its own, still means it, so earlier commands run as they did.
const changeArg = process.argv[8] ?? 'loads';
const change = (changeArg === 'changed' ? 'loads' : changeArg) as RefreshChange;
if (!['same', 'loads', 'whole'].includes(change)) throw new Error(`the change is same, loads or whole, not ${changeArg}`);
const ROUND_MS = Number(process.argv[9] ?? 500);
const WARM_MAX_MS = 20_000;
// As refresh.bench.ts: servers on core 1, this load generator on core 0, when the machine has two.
const PINNED = cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0;
if (PINNED) spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

const texts = refreshBodies(size, change);
const requests = (port: number) => texts.map((body) => refreshRequest(port, body));
const core = PINNED ? '1' : undefined;
const a = await startRefreshServer(resolve(aScript), aKind, core);
const b = await startRefreshServer(resolve(bScript), bKind, core);
try {
  const sent = { a: requests(a.port), b: requests(b.port) };
  await warmUntilCompiled(a, sent.a, WARM_MAX_MS);
  await warmUntilCompiled(b, sent.b, WARM_MAX_MS);
  const us = { a: [] as number[], b: [] as number[] };
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      await measured(a, sent.a, us.a, ROUND_MS);
      await measured(b, sent.b, us.b, ROUND_MS);
    } else {
      await measured(b, sent.b, us.b, ROUND_MS);
      await measured(a, sent.a, us.a, ROUND_MS);
    }
    ratios.push(us.b.at(-1)! / us.a.at(-1)!);
  }
  const r = spread(ratios);
  console.log(
    `${size} instances, ${change}: server CPU per refresh A ${spread(us.a).median.toFixed(1)} µs, ` +
      `B ${spread(us.b).median.toFixed(1)} µs; B/A ${times(r.median)} (p10 ${times(r.p10)}, p90 ${times(r.p90)}, ${rounds} rounds)`,
  );
} finally {
  await a.stop();
  await b.stop();
}
