/**
 * Where the Coordinator's proxy spends its CPU beyond a bare two-leg proxy: the same Coordinator
 * with one part of its per-request work left out at a time, then all of them, in alternating rounds
 * against the same fast fake engines (CPU per streamed PD request at concurrency 32).
 *
 * The parts are left out in a throwaway checkout of HEAD with `bench/proxy-ablation.patch` applied
 * (switches read from PDLINK_ABLATE); the shipped code has none. A part left out is behaviour
 * lost, so this measures what each behaviour costs, not a configuration anyone should run:
 *   validation    the body's schema check (valibot)
 *   exact-json    the body read by the checked, exact-integer reader instead of request.json()
 *   metrics       the proxy's counters and histograms
 *   ledger        the KV ledger's reservation (a ledger that holds nothing)
 *   scheduler     the pick (the first pair for every request)
 *   deadlines     the request's three deadlines
 *   client-abort  the listener for the client leaving
 *   served-by     the response headers naming P and D
 *   sse-events    holding back a torn SSE event (the relay forwards bytes as they come)
 *
 * Run: bun bench/proxy-ablation.ts [rounds]   → bench/results/proxy-ablation.{json,md}
 * (needs git, and the Coordinator's native library built by `make -C native` as for any checkout)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { markdownTable, spread, times, writeResults } from './lib.ts';
import { concurrent, viaProxy } from './proxy-cpu-client.ts';
import { startBun, startPdlink, type Host } from './proxy-cpu-hosts.ts';
import { cpuNs } from './proxy-cpu-proc.ts';
import { PARTS } from './proxy-ablation-parts.ts';

const rounds = Number(process.argv[2] ?? 10);
/** Requests sent before measuring (the Coordinator's compilers fall quiet after ≈ 20,000) and per round. */
const WARM = 25_000;
const PER_ROUND = 4_000;

const repo = resolve(import.meta.dir, '..');
const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const checkout = join(mkdtempSync(join(tmpdir(), 'pdlink-ablation-')), 'pdlink');
git('worktree', 'add', '--detach', checkout, 'HEAD');
const variants = [{ name: 'none', off: '' }, ...PARTS.map((part) => ({ name: part, off: part })), { name: 'all', off: PARTS.join(',') }];
const hosts: Host[] = [];
let engines: Awaited<ReturnType<typeof startBun>> | undefined;
try {
  execFileSync('git', ['apply', join(repo, 'bench', 'proxy-ablation.patch')], { cwd: checkout });
  symlinkSync(join(repo, 'node_modules'), join(checkout, 'node_modules'));
  execFileSync('make', ['-s', '-C', join(checkout, 'native')]);
  engines = await startBun('engines', 'proxy-engines.ts', [], ['prefill', 'decode']);
  for (const variant of variants) {
    process.env['PDLINK_ABLATE'] = variant.off;
    hosts.push(await startPdlink(engines, join(checkout, 'bench', 'proxy-pdlink-host.ts')));
  }
  delete process.env['PDLINK_ABLATE'];
  for (const host of hosts) await concurrent(viaProxy(host.url), WARM);
  const us: number[][] = variants.map(() => []);
  for (let round = 0; round < rounds; round++) {
    // Each round in the other order, so no variant always runs on a machine the one before warmed.
    const order = variants.map((_, i) => (round % 2 === 0 ? i : variants.length - 1 - i));
    for (const i of order) {
      const before = cpuNs(hosts[i]!.proc.pid);
      await concurrent(viaProxy(hosts[i]!.url), PER_ROUND);
      us[i]!.push((cpuNs(hosts[i]!.proc.pid) - before) / PER_ROUND / 1000);
    }
    console.log(`round ${round + 1}: ${variants.map((v, i) => `${v.name} ${us[i]!.at(-1)!.toFixed(1)}`).join(', ')}`);
  }
  const rows = variants.map((variant, i) => {
    const cpu = spread(us[i]!);
    const ratio = spread(us[i]!.map((u, r) => u / us[0]![r]!));
    return { variant: variant.name, cpuUs: cpu.median, ratio, savedUs: spread(us[0]!).median - cpu.median };
  });
  const all = rows.at(-1)!;
  const summary =
    `CPU per streamed PD request at concurrency 32, the Coordinator with one part of its per-request work left out at a time (${rounds} alternating rounds of ${PER_ROUND} requests after ${WARM} to warm each): ` +
    `with nothing left out ${rows[0]!.cpuUs.toFixed(1)} µs; with every part left out ${all.cpuUs.toFixed(1)} µs (${times(all.ratio.median)}, p10 ${times(all.ratio.p10)}, p90 ${times(all.ratio.p90)}).`;
  writeResults('proxy-ablation', {
    summary,
    markdownTable: markdownTable(
      ['left out', 'CPU µs / request', 'vs nothing left out (p10–p90)', 'µs saved'],
      rows.map((r) => [
        r.variant,
        r.cpuUs.toFixed(1),
        `${times(r.ratio.median)} (${times(r.ratio.p10)}–${times(r.ratio.p90)})`,
        r.savedUs.toFixed(1),
      ]),
    ),
    json: {
      rounds,
      perRound: PER_ROUND,
      warm: WARM,
      head: git('rev-parse', 'HEAD'),
      rows,
      samplesUs: Object.fromEntries(variants.map((v, i) => [v.name, us[i]])),
    },
  });
  console.log(summary);
} finally {
  for (const host of hosts) await host.proc.stop();
  await engines?.stop();
  git('worktree', 'remove', '--force', checkout);
}
