/**
 * Question: how much CPU does the pdlink proxy spend per request, next to a bare two-leg proxy on
 * Bun's `fetch` (P leg, then D leg streamed back, nothing else) in front of the same engines, and to
 * nginx when it is installed (Debian `nginx`; one and two hops — skipped with a note when absent)?
 * Goal: ≤ 1.2× the bare proxy.
 *
 * Set-up: the proxy benchmark's simulated cluster (one prefill, one decode `pdlink sim-engine`, zero
 * compute time). Each round sends PROXY_CPU_REQUESTS streaming completions at concurrency 32
 * through each proxy, alternating which goes first; CPU is the proxy process's utime+stime from
 * /proc (10 ms ticks) over the round, divided by the requests.
 *
 * Run: bun bench/proxy-cpu.bench.ts   → bench/results/proxy-cpu.{json,md}
 */
import { readFileSync } from 'node:fs';
import { SimCluster } from '../src/sim/cluster.ts';
import { alternate, markdownTable, percentile, spread, times, writeResults } from './lib.ts';

const ROUNDS = Number(process.env['PROXY_CPU_ROUNDS'] ?? 6);
const REQUESTS = Number(process.env['PROXY_CPU_REQUESTS'] ?? 2000);
const CONCURRENCY = 32;
const MODEL = 'bench-sim';
const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(51).trim(), max_tokens: 16, stream: true });

/** The bare proxy: the client's body to P (non-streaming, one token), P's kv_transfer_params to D, D's stream back. */
const BARE = `
const [p, d] = process.argv.slice(-2);
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, async fetch(req) {
  const body = await req.json();
  const id = req.headers.get('x-request-id') ?? '';
  const headers = { 'content-type': 'application/json', 'x-request-id': id };
  const pre = await fetch(p + '/v1/completions', { method: 'POST', headers,
    body: JSON.stringify({ ...body, stream: false, max_tokens: 1, kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false } }) });
  const answer = await pre.json();
  const dec = await fetch(d + '/v1/completions', { method: 'POST', headers, body: JSON.stringify({ ...body, kv_transfer_params: answer.kv_transfer_params }) });
  return new Response(dec.body, { status: dec.status, headers: { 'content-type': dec.headers.get('content-type') ?? 'text/event-stream' } });
} });
console.log(server.port);
`;

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in 100 Hz ticks
}

let seq = 0;
async function load(url: string): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        next++;
        const res = await fetch(`${url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': `cpu-${seq++}` },
          body: BODY,
        });
        const text = await res.text();
        if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
      }
    }),
  );
}

/** µs of the process's CPU per request over one round. */
async function cpuPerRequest(pid: number, url: string): Promise<number> {
  const before = cpuMs(pid);
  await load(url);
  return ((cpuMs(pid) - before) * 1000) / REQUESTS;
}

const cluster = await SimCluster.start({
  prefill: 1,
  decode: 1,
  model: MODEL,
  engine: { prefillMsPerToken: 0, decodeMsPerToken: 0, numBlocks: 4096, blockBytes: 4096, blockTokens: 16 },
});
const bare = Bun.spawn([process.execPath, '-e', BARE, cluster.engine('p0').inferenceUrl, cluster.engine('d0').inferenceUrl], {
  stdout: 'pipe',
  stderr: 'inherit',
});
try {
  const { value } = await bare.stdout.getReader().read();
  const bareUrl = `http://127.0.0.1:${Number(new TextDecoder().decode(value).trim())}`;
  const pdlinkPid = cluster.coordinator.child.pid!;
  await load(bareUrl); // warm-up of both proxies
  await load(cluster.proxyUrl);
  const r = await alternate(
    ROUNDS,
    () => cpuPerRequest(bare.pid, bareUrl),
    () => cpuPerRequest(pdlinkPid, cluster.proxyUrl),
  );
  const ratio = spread(r.ratios);
  const nginx = Bun.which('nginx');
  const nginxNote =
    nginx === null
      ? 'nginx is not installed here: its columns (one and two hops) were skipped.'
      : `nginx found at ${nginx} but not measured by this version of the benchmark.`;
  console.log(
    `pdlink ${percentile(r.subject, 50).toFixed(1)} µs vs bare ${percentile(r.baseline, 50).toFixed(1)} µs CPU per request: ${times(ratio.median)} (rounds ${r.ratios.map(times).join(', ')}); ${nginxNote}`,
  );
  const summary =
    `Proxy CPU per streamed request at concurrency ${CONCURRENCY}: pdlink ${percentile(r.subject, 50).toFixed(1)} µs, a bare two-leg Bun proxy on fetch ${percentile(r.baseline, 50).toFixed(1)} µs, ` +
    `${times(ratio.median)} (p10 ${times(ratio.p10)}, p90 ${times(ratio.p90)}; ${ROUNDS} alternating rounds of ${REQUESTS} requests); goal ≤ 1.2×: ${ratio.median <= 1.2 ? 'met' : 'not met'}. ` +
    `${nginxNote} The machine is a 2-core VM shared with other test runs while this ran; the engines and the client share it too.`;
  writeResults('proxy-cpu', {
    json: {
      question: 'proxy CPU per request, pdlink vs a bare two-leg Bun proxy on fetch',
      rounds: ROUNDS,
      requests: REQUESTS,
      concurrency: CONCURRENCY,
      bareUs: r.baseline,
      pdlinkUs: r.subject,
      ratios: r.ratios,
      ratio,
      nginx: nginx ?? null,
    },
    markdownTable: markdownTable(
      ['proxy', 'CPU µs / request (median)', 'vs bare'],
      [
        ['bare two-leg Bun proxy (fetch)', percentile(r.baseline, 50).toFixed(1), '1.00×'],
        ['pdlink', percentile(r.subject, 50).toFixed(1), `${times(ratio.median)} (p10 ${times(ratio.p10)}, p90 ${times(ratio.p90)})`],
        ['nginx, one / two hops', nginx === null ? 'not installed' : 'not measured', '—'],
      ],
    ),
    summary,
  });
} finally {
  bare.kill();
  await bare.exited;
  await cluster.stop();
}
