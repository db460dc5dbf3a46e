/**
 * Question: what does a user of a 2 P + 2 D deployment feel under Mooncake's synthetic trace —
 * TTFT, TPOT, end to end, goodput under an SLO — measured by `pdlink bench` itself, the way a user
 * runs it? This is the harness's reference run (the policy comparison builds on it).
 *
 * Set-up: a simulated cluster (src/sim/cluster/cluster.ts) of 2 prefill and 2 decode `pdlink sim-engine`
 * processes behind the Coordinator's proxy; `pdlink bench` as a child process replays the first
 * HARNESS_BENCH_REQUESTS requests of ../shared/traces/mooncake_synthetic_trace.jsonl open-loop,
 * scaled to fit two shared cores: arrivals × 0.2 (about 20 requests a second), prompt and
 * completion lengths × 0.02 (10-token blocks). The engines take 0.1 ms per prompt token to prefill
 * and 5 ms per generated token. The committed figures were measured before the simulator had its
prefix cache and prefill queue (src/sim/engine/timing.ts); a new run includes both.
 *
 * Run: `bun bench/harness.bench.ts` (or `npm run bench -- harness`); results in
 * bench/results/harness-synthetic.{json,html}.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SimCluster } from '../src/sim/cluster/cluster.ts';

const REPO = join(import.meta.dir, '..');
const TRACE = [process.env['PDLINK_TRACES'], join(REPO, '..', 'shared', 'traces'), join(REPO, '..', '..', 'shared', 'traces')]
  .filter((dir): dir is string => dir !== undefined)
  .map((dir) => join(dir, 'mooncake_synthetic_trace.jsonl'))
  .find((path) => existsSync(path));
const REQUESTS = process.env['HARNESS_BENCH_REQUESTS'] ?? '600';

if (TRACE === undefined) {
  console.error(
    'harness bench: mooncake_synthetic_trace.jsonl not found: put ../shared/traces/ beside the repository or set PDLINK_TRACES',
  );
  process.exit(1);
}

const cluster = await SimCluster.start({
  prefill: 2,
  decode: 2,
  engine: { numBlocks: 4096, maxModelLen: 8192, prefillMsPerToken: 0.1, decodeMsPerToken: 5 },
});
try {
  const args = [
    join(REPO, 'src', 'main.ts'),
    'bench',
    '--base-url',
    cluster.proxyUrl,
    '--model',
    cluster.model,
    '--trace',
    relative(REPO, TRACE),
    '--time-scale',
    '0.2',
    '--length-scale',
    '0.02',
    '--max-requests',
    REQUESTS,
    '--duration-s',
    '300',
    '--slo-ttft-ms',
    '200',
    '--slo-tpot-ms',
    '20',
    '--out',
    join('bench', 'results', 'harness-synthetic'),
    '--chart-library',
    'beside',
  ];
  console.log(`$ pdlink ${args.slice(1).join(' ')}`);
  const child = spawn(process.execPath, args, { stdio: 'inherit', cwd: REPO });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) process.exitCode = 1;
} finally {
  await cluster.stop();
}
