/**
 * Question: how does SGLang's bootstrap protocol compare with vLLM's two legs in turn, through the
 * same proxy, on the same simulated engines and load? Two clusters of one prefill and one decode
 * `pdlink sim-engine` process each, identical but for the protocol (`pdlink.proxy.protocol` and
 * `--protocol`), with some simulated compute (prefill 0.02 ms per prompt token, decode 0.5 ms per
 * token), a 256-token prompt and 16 streamed tokens:
 *   - time to first token: the first byte of the streamed answer, requests one at a time;
 *   - throughput: requests per second completed with 8 in flight, each read to its end.
 * The clusters run in alternating order each round, so drift of the shared machine hits both.
 *
 * Run: `bun bench/sglang.bench.ts`; results in bench/results/sglang.*.
 */
import { markdownTable, percentile, spread, writeResults } from './lib.ts';
import { SimCluster } from '../src/sim/cluster/cluster.ts';

const ROUNDS = Number(process.env['SGLANG_BENCH_ROUNDS'] ?? 5);
const SEQUENTIAL = Number(process.env['SGLANG_BENCH_SEQUENTIAL'] ?? 100);
const CONCURRENT_TOTAL = Number(process.env['SGLANG_BENCH_CONCURRENT'] ?? 200);
const IN_FLIGHT = 8;
const MODEL = 'bench-sim';
const BODY = JSON.stringify({ model: MODEL, prompt: 'word '.repeat(256).trim(), max_tokens: 16, stream: true });

type Mode = 'vllm' | 'sglang';

/** One streamed request: ms to its first byte, and checks it ended with [DONE]. */
async function one(cluster: SimCluster): Promise<number> {
  const start = performance.now();
  const res = await cluster.fetch(`${cluster.proxyUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY,
  });
  const reader = res.body!.getReader();
  const first = await reader.read();
  const ttft = performance.now() - start;
  let text = first.done ? '' : new TextDecoder().decode(first.value);
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    text += new TextDecoder().decode(next.value);
  }
  if (res.status !== 200 || !text.endsWith('data: [DONE]\n\n')) throw new Error(`bad answer ${res.status}: ${text.slice(0, 200)}`);
  return ttft;
}

async function ttftRound(cluster: SimCluster, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await one(cluster));
  return out;
}

async function throughputRound(cluster: SimCluster, total: number): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < total) {
        next++;
        await one(cluster);
      }
    }),
  );
  return total / ((performance.now() - start) / 1000);
}

const engine = { prefillMsPerToken: 0.02, decodeMsPerToken: 0.5, blockTokens: 16, blockBytes: 4096 };
const clusters: Record<Mode, SimCluster> = {
  vllm: await SimCluster.start({ prefill: 1, decode: 1, model: MODEL, engine }),
  sglang: await SimCluster.start({
    prefill: 1,
    decode: 1,
    model: MODEL,
    engine: { ...engine, protocol: 'sglang' },
    coordinatorConfig: { pdlink: { proxy: { protocol: 'sglang' } } },
  }),
};
try {
  for (const mode of ['vllm', 'sglang'] as const) await ttftRound(clusters[mode], 30);
  const ttft = { vllm: [] as number[], sglang: [] as number[] };
  const ttft99 = { vllm: [] as number[], sglang: [] as number[] };
  const rps = { vllm: [] as number[], sglang: [] as number[] };
  const ratioTtft: number[] = [];
  const ratioRps: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order: Mode[] = r % 2 === 0 ? ['vllm', 'sglang'] : ['sglang', 'vllm'];
    const got: Partial<Record<Mode, { ttft: number[]; rps: number }>> = {};
    for (const mode of order) {
      const latencies = await ttftRound(clusters[mode], SEQUENTIAL);
      got[mode] = { ttft: latencies, rps: await throughputRound(clusters[mode], CONCURRENT_TOTAL) };
    }
    for (const mode of ['vllm', 'sglang'] as const) {
      ttft[mode].push(percentile(got[mode]!.ttft, 50));
      ttft99[mode].push(percentile(got[mode]!.ttft, 99));
      rps[mode].push(got[mode]!.rps);
    }
    ratioTtft.push(percentile(got.sglang!.ttft, 50) / percentile(got.vllm!.ttft, 50));
    ratioRps.push(got.sglang!.rps / got.vllm!.rps);
  }
  const s = (xs: number[]) => spread(xs);
  const cell = (xs: number[], digits = 2) => `${s(xs).median.toFixed(digits)} (${s(xs).min.toFixed(digits)}–${s(xs).max.toFixed(digits)})`;
  const rows = [
    ['vLLM (P, then D)', cell(ttft.vllm), cell(ttft99.vllm), cell(rps.vllm, 1), '1.00×', '1.00×'],
    [
      'SGLang (P and D at once)',
      cell(ttft.sglang),
      cell(ttft99.sglang),
      cell(rps.sglang, 1),
      `${s(ratioTtft).median.toFixed(2)}×`,
      `${s(ratioRps).median.toFixed(2)}×`,
    ],
  ];
  const table = markdownTable(
    [
      'protocol',
      'TTFT p50 ms (min–max of rounds)',
      'TTFT p99 ms',
      `throughput req/s, ${IN_FLIGHT} in flight`,
      'TTFT vs vLLM',
      'throughput vs vLLM',
    ],
    rows,
  );
  const summary =
    `SGLang's protocol: time to first token ${s(ratioTtft).median.toFixed(2)}× vLLM's, throughput ${s(ratioRps).median.toFixed(2)}× ` +
    `(${ROUNDS} alternating rounds of ${SEQUENTIAL} sequential + ${CONCURRENT_TOTAL} concurrent streamed requests, 256-token prompt, 16 tokens; ` +
    `a 2-core VM shared with other test runs).`;
  writeResults('sglang', {
    json: {
      rounds: ROUNDS,
      sequential: SEQUENTIAL,
      concurrent: CONCURRENT_TOTAL,
      inFlight: IN_FLIGHT,
      engine,
      ttftP50Ms: ttft,
      ttftP99Ms: ttft99,
      requestsPerSecond: rps,
      ratioTtft,
      ratioRps,
    },
    markdownTable: table,
    summary,
  });
  console.log(table);
  console.log(summary);
} finally {
  await Promise.all([clusters.vllm.stop(), clusters.sglang.stop()]);
}
