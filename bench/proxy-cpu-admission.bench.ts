/**
 * Question: what does admission add to the CPU of a proxied request when the cluster is not
 * saturated (every request starts at once)? Goal: ≤ 1.05× the CPU per request of the same
 * Coordinator with admission off (`pdlink.admission.enabled: false`, the proxy as it was before
 * admission), in one alternating run.
 *
 * Set-up: the proxy CPU benchmark's fast fake engines (proxy-engines.ts, pinned to CPU 0) and two
 * `pdlink coordinator` processes in front of them (pinned to CPU 1), one with admission on (its
 * defaults: two classes, no stage limits) and one with it off, each warmed until its JIT threads
 * settle. Each round sends REQUESTS streamed PD requests at concurrency 32 to each, in alternating
 * order; CPU is the process's time on CPU over the round (/proc/<pid>/task/<tid>/schedstat) divided
 * by the requests. The figure is the median of the per-round ratios, with p10–p90.
 *
 * Run: bun bench/proxy-cpu-admission.bench.ts → bench/results/proxy-cpu-admission.{json,md}
 */
import { rmSync } from 'node:fs';
import { markdownTable, spread, writeResults } from './lib.ts';
import { dir, startBun, startPdlink, type Host } from './proxy-cpu-hosts.ts';
import { cpuNs, jitNs } from './proxy-cpu-proc.ts';
import { concurrent, viaProxy } from './proxy-cpu-client.ts';

const ROUNDS = Number(process.env['PROXY_CPU_ADMISSION_ROUNDS'] ?? 12);
const REQUESTS = Number(process.env['PROXY_CPU_ADMISSION_REQUESTS'] ?? 2000);
const WARM_CHUNK = 2000;
const JIT_SETTLED = 0.02;
const MAX_WARM = 60_000;
const GOAL = 1.05;

type Mode = 'off' | 'on';
const LABELS: Record<Mode, string> = { off: 'admission off (enabled: false)', on: 'admission on (defaults)' };

async function warm(host: Host): Promise<number> {
  const pid = host.proc.pid;
  const send = viaProxy(host.url);
  let sent = 0;
  for (let quiet = 0; quiet < 2 && sent < MAX_WARM; sent += WARM_CHUNK) {
    const jit0 = jitNs(pid);
    const cpu0 = cpuNs(pid);
    await concurrent(send, WARM_CHUNK);
    quiet = (jitNs(pid) - jit0) / (cpuNs(pid) - cpu0) < JIT_SETTLED ? quiet + 1 : 0;
  }
  return sent;
}

const engines = await startBun('engines', 'proxy-engines.ts', [], ['prefill', 'decode']);
const hosts: Record<Mode, Host> = {
  off: await startPdlink(engines, undefined, false, { pdlink: { admission: { enabled: false } } }),
  on: await startPdlink(engines, undefined, false, {}),
};
try {
  const warmed: Record<Mode, number> = { off: await warm(hosts.off), on: await warm(hosts.on) };
  const perRequest: Record<Mode, number[]> = { off: [], on: [] };
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order: Mode[] = round % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
    const used: Partial<Record<Mode, number>> = {};
    for (const mode of order) {
      const pid = hosts[mode].proc.pid;
      const before = cpuNs(pid);
      await concurrent(viaProxy(hosts[mode].url), REQUESTS);
      used[mode] = (cpuNs(pid) - before) / REQUESTS / 1000;
      perRequest[mode].push(used[mode]);
    }
    ratios.push(used.on! / used.off!);
    console.log(`round ${round}: off ${used.off!.toFixed(1)} µs, on ${used.on!.toFixed(1)} µs, ratio ${(used.on! / used.off!).toFixed(3)}`);
  }
  const ratio = spread(ratios);
  const off = spread(perRequest.off);
  const on = spread(perRequest.on);
  const f = (x: number, d = 3) => x.toFixed(d);
  const summary =
    `CPU per proxied request with admission on (not saturated): ${f(on.median, 1)} µs = ${f(ratio.median)}× (p10 ${f(ratio.p10)}×, p90 ${f(ratio.p90)}×) ` +
    `the ${f(off.median, 1)} µs with admission off (goal ≤ ${GOAL}×: ${ratio.median <= GOAL ? 'met' : 'NOT MET'}); ${ROUNDS} alternating rounds of ${REQUESTS} ` +
    `streamed PD requests at concurrency 32, each Coordinator warmed first (off ${warmed.off}, on ${warmed.on} requests), proxies on CPU 1, engines on CPU 0.`;
  console.log(summary);
  writeResults('proxy-cpu-admission', {
    summary,
    markdownTable: markdownTable(
      ['mode', 'CPU µs / request (median)', 'p10 – p90', 'vs off'],
      [
        [LABELS.off, f(off.median, 1), `${f(off.p10, 1)} – ${f(off.p90, 1)}`, '1.000×'],
        [
          LABELS.on,
          f(on.median, 1),
          `${f(on.p10, 1)} – ${f(on.p90, 1)}`,
          `${f(ratio.median)}× (p10 ${f(ratio.p10)}×, p90 ${f(ratio.p90)}×)`,
        ],
      ],
    ),
    json: { rounds: ROUNDS, requests: REQUESTS, goal: GOAL, warmed, perRequestUs: perRequest, ratios, ratio, off, on },
  });
} finally {
  await Promise.all([hosts.off.proc.stop(), hosts.on.proc.stop(), engines.stop()]);
  rmSync(dir, { recursive: true, force: true });
}
