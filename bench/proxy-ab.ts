/**
 * Same-run A/B of two versions of the Coordinator's proxy: CPU per streamed PD request at
 * concurrency 32, the two processes measured in alternating rounds against the same fake engines.
 * To compare a change with the code before it, point A at another checkout's host script.
 *
 * Run: bun bench/proxy-ab.ts <A host script> <B host script> [rounds]
 *   e.g. git worktree add /tmp/before HEAD~1 && ln -s "$PWD/node_modules" /tmp/before/node_modules &&
 *        bun bench/proxy-ab.ts /tmp/before/bench/proxy-pdlink-host.ts bench/proxy-pdlink-host.ts 12
 */
import { resolve } from 'node:path';
import { spread, times } from './lib.ts';
import { concurrent, viaProxy } from './proxy-cpu-client.ts';
import { startBun, startPdlink } from './proxy-cpu-hosts.ts';
import { cpuNs } from './proxy-cpu-proc.ts';

const [a, b] = process.argv.slice(2, 4).map((script) => resolve(script!));
if (a === undefined || b === undefined) {
  console.error('usage: bun bench/proxy-ab.ts <A host script> <B host script> [rounds]');
  process.exit(2);
}
const rounds = Number(process.argv[4] ?? 10);
/** Requests sent before measuring (the Coordinator's compilers fall quiet after ≈ 20,000) and per round. */
const WARM = 25_000;
const PER_ROUND = 4_000;

const engines = await startBun('engines', 'proxy-engines.ts', [], ['prefill', 'decode']);
const hosts = { a: await startPdlink(engines, a), b: await startPdlink(engines, b) };
try {
  for (const host of Object.values(hosts)) await concurrent(viaProxy(host.url), WARM);
  const us = { a: [] as number[], b: [] as number[] };
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    // Each round starts with the other version, so neither always runs on a machine the other warmed.
    for (const name of round % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
      const pid = hosts[name].proc.pid;
      const before = cpuNs(pid);
      await concurrent(viaProxy(hosts[name].url), PER_ROUND);
      us[name].push((cpuNs(pid) - before) / PER_ROUND / 1000);
    }
    ratios.push(us.b.at(-1)! / us.a.at(-1)!);
    console.log(`round ${round}: A ${us.a.at(-1)!.toFixed(1)} µs, B ${us.b.at(-1)!.toFixed(1)} µs, B/A ${times(ratios.at(-1)!)}`);
  }
  const r = spread(ratios);
  console.log(
    `CPU per request: A ${spread(us.a).median.toFixed(1)} µs, B ${spread(us.b).median.toFixed(1)} µs; ` +
      `B/A ${times(r.median)} (p10 ${times(r.p10)}, p90 ${times(r.p90)}, ${rounds} rounds)`,
  );
} finally {
  await hosts.a.proc.stop();
  await hosts.b.proc.stop();
  await engines.stop();
}
