/**
 * Question: does routing on the engines' own KV events (precise_prefix, and decode-first) give a
 * 2 P + 2 D deployment more goodput and a lower TTFT than pdlink's guesses (cache_affinity) and
 * than load-only policies, at the same load? Goals: precise_prefix goodput ≥ 1.3× cache_affinity's
 * on the multi-tenant load with TTFT p90 ≤ 0.5× of it, and never below cache_affinity on either
 * Mooncake trace.
 *
 * Set-up: for every (workload, configuration) a fresh simulated cluster (src/sim/cluster/cluster.ts) of 2
 * prefill and 2 decode `pdlink sim-engine` processes that publish their prefix caches' KV events as
 * vLLM does (`kvEvents`) and tokenize with one small Hugging Face tokenizer (src/sim/engine/model/word-tokenizer.ts),
 * which the Coordinator loads too (`scheduler.tokenizers`), so text prompts route on exact token
 * blocks; `pdlink bench` replays the workload open loop as a child process. Workloads: Mooncake's
 * synthetic and conversation traces (scaled as bench/policies.bench.ts scales them), and a
 * multi-tenant load written as a trace: TENANTS tenants, each with its own long system prompt,
 * whose users hold multi-turn conversations (each turn the whole conversation so far plus a new
 * question). Configurations alternate order each round; ratios are against cache_affinity of the
 * same round, medians over rounds.
 *
 * Run: `bun bench/kv-routing.bench.ts` (KV_ROUTING_ROUNDS, KV_ROUTING_ONLY=a,b narrow it); results
 * in bench/results/kv-routing.{json,md} (no per-run HTML). KV_ROUTING_WORKLOAD=NAME runs one workload
 * (multi-tenant-heavy only so) into bench/results/kv-routing-NAME.{json,md}. KV_ROUTING_CACHE_BLOCKS
 * sets each engine's prefix cache (default 4096 blocks, which holds every workload's working set, so
 * nothing is evicted and a guess of where a prefix is stays right); a smaller cache evicts, which
 * the engines' events report and a guess does not (results then named …-cacheN; a KV_ROUTING_PREFILL_MS
 * other than 0.07 adds …-prefillM).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimCluster } from '../src/sim/cluster/cluster.ts';
import { writeWordTokenizer } from '../src/sim/engine/model/word-tokenizer.ts';
import { reportKvRouting, type RoutingRow, type RoutingSummary } from './kv-routing-report.ts';

const REPO = join(import.meta.dir, '..');
const TRACE_DIR = [process.env['PDLINK_TRACES'], join(REPO, '..', 'shared', 'traces'), join(REPO, '..', '..', 'shared', 'traces')]
  .filter((dir): dir is string => dir !== undefined)
  .find((dir) => existsSync(join(dir, 'mooncake_synthetic_trace.jsonl')));
const ROUNDS = Number(process.env['KV_ROUTING_ROUNDS'] ?? '3');
const ONLY = process.env['KV_ROUTING_ONLY'];
const ONLY_WORKLOAD = process.env['KV_ROUTING_WORKLOAD'];
const REQUESTS = process.env['KV_ROUTING_REQUESTS'] ?? '600';
const LOCAL_PREFILL = 48;
const TENANTS = 12;
const MODEL = 'kv-routing-sim';
const ENGINE = {
  numBlocks: 16_384,
  maxModelLen: 16_384,
  blockTokens: 16,
  prefillMsPerToken: Number(process.env['KV_ROUTING_PREFILL_MS'] ?? '0.07'),
  decodeMsPerToken: 5,
  decodeBatchSlowdown: 0.05,
  prefixCacheBlocks: Number(process.env['KV_ROUTING_CACHE_BLOCKS'] ?? '4096'),
};
const SLO = { ttftMs: 2000, tpotMs: 25 };

if (TRACE_DIR === undefined) {
  console.error('kv-routing bench: the Mooncake traces were not found: put ../shared/traces/ beside the repository or set PDLINK_TRACES');
  process.exit(1);
}

const work = mkdtempSync(join(tmpdir(), 'pdlink-kv-routing-'));
const tokenizer = writeWordTokenizer(join(work, 'tokenizer'));

/**
 * The multi-tenant load as a Mooncake-format trace (512-token hash blocks): each tenant's system
 * prompt is SYSTEM_BLOCKS blocks of its own; a conversation adds a block or two per turn; arrivals
 * are Poisson, conversations interleaved.
 */
function multiTenantTrace(requests: number, seed: number): string {
  let x = seed;
  const rand = (): number => {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return x / 4294967296;
  };
  const SYSTEM_BLOCKS = 8;
  let nextHash = 1_000_000;
  const systems = Array.from({ length: TENANTS }, (_, t) => Array.from({ length: SYSTEM_BLOCKS }, (_, b) => t * 100 + b));
  const live: { hashes: number[] }[] = [];
  const lines: string[] = [];
  let at = 0;
  for (let r = 0; r < requests; r++) {
    at += -Math.log(1 - rand()) * 70;
    let conversation = live.length > 0 && rand() < 0.65 ? live[Math.floor(rand() * live.length)] : undefined;
    if (conversation === undefined || conversation.hashes.length > SYSTEM_BLOCKS + 14) {
      conversation = { hashes: [...systems[Math.floor(rand() * TENANTS)]!] };
      live.push(conversation);
      if (live.length > 48) live.shift();
    }
    const turn = 1 + Math.floor(rand() * 2);
    for (let k = 0; k < turn; k++) conversation.hashes.push(nextHash++);
    lines.push(
      JSON.stringify({
        timestamp: Math.round(at),
        input_length: conversation.hashes.length * 512 - Math.floor(rand() * 256),
        output_length: 100 + Math.floor(rand() * 300),
        hash_ids: conversation.hashes,
      }),
    );
  }
  return `${lines.join('\n')}\n`;
}

const multiTenant = join(work, 'multi_tenant_trace.jsonl');
writeFileSync(multiTenant, multiTenantTrace(Number(REQUESTS), 7));

const WORKLOADS = [
  { name: 'synthetic', file: join(TRACE_DIR, 'mooncake_synthetic_trace.jsonl'), timeScale: '0.06', lengthScale: '0.02' },
  { name: 'conversation', file: join(TRACE_DIR, 'mooncake_conversation_trace.jsonl'), timeScale: '0.06', lengthScale: '0.02' },
  { name: 'multi-tenant', file: multiTenant, timeScale: '0.7', lengthScale: '0.06' },
  // The same conversations arriving 1.75× as fast: prefill capacity binds (only when named).
  { name: 'multi-tenant-heavy', file: multiTenant, timeScale: '0.4', lengthScale: '0.06', optIn: true },
] as const;

const CONFIGS = [
  { name: 'round_robin', prefill: 'round_robin', decode: 'load_balance' },
  { name: 'load_balance', prefill: 'load_balance', decode: 'load_balance' },
  { name: 'cache_affinity', prefill: 'cache_affinity', decode: 'load_balance' },
  { name: 'cache_affinity+local', prefill: 'cache_affinity', decode: 'load_balance', local: true },
  { name: 'precise_prefix', prefill: 'precise_prefix', decode: 'precise_prefix' },
  { name: 'precise_prefix+decode_first', prefill: 'precise_prefix', decode: 'precise_prefix', local: true, decodeFirst: true },
] as const;
type Config = (typeof CONFIGS)[number];

type Row = RoutingRow;

async function runOne(workload: (typeof WORKLOADS)[number], config: Config, round: number): Promise<Row> {
  const loadAtStart = loadavg()[0]!;
  const cluster = await SimCluster.start({
    prefill: 2,
    decode: 2,
    model: MODEL,
    kvEvents: true,
    engine: { ...ENGINE, tokenizer },
    coordinatorConfig: {
      scheduler: {
        policy: { prefill: config.prefill, decode: config.decode },
        tokenizers: { [MODEL]: tokenizer },
        ...('local' in config
          ? {
              conditional_disaggregation: {
                max_local_prefill_length: LOCAL_PREFILL,
                ...('decodeFirst' in config ? { decode_first: true } : {}),
              },
            }
          : {}),
      },
    },
  });
  const out = join(work, `${workload.name}-${config.name}-${round}`);
  try {
    const args = [
      join(REPO, 'src', 'main.ts'),
      'bench',
      ...['--base-url', cluster.proxyUrl, '--model', cluster.model, '--endpoint', 'chat'],
      ...['--trace', workload.file, '--time-scale', workload.timeScale, '--length-scale', workload.lengthScale],
      ...['--max-requests', REQUESTS, '--duration-s', '300'],
      ...['--slo-ttft-ms', String(SLO.ttftMs), '--slo-tpot-ms', String(SLO.tpotMs)],
      ...['--out', out],
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: REPO });
    let errText = '';
    child.stderr!.on('data', (chunk: Buffer) => (errText = (errText + chunk.toString()).slice(-4000)));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`pdlink bench exited with ${code}: ${errText}`);
    const report = JSON.parse(readFileSync(`${out}.json`, 'utf8')) as { runs: { summary: RoutingSummary }[] };
    let prompt = 0;
    let hit = 0;
    let local = 0;
    let legs = 0;
    const prefillLegs: number[] = [];
    for (const engine of cluster.engines) {
      const status = (await (await cluster.fetch(`${engine.manageUrl}/sim/status`, { headers: cluster.authorization() })).json()) as {
        requests: { prefill: number; local: number };
        prefix_cache: { prompt_tokens: number; hit_tokens: number };
      };
      prompt += status.prefix_cache.prompt_tokens;
      hit += status.prefix_cache.hit_tokens;
      local += status.requests.local;
      legs += status.requests.prefill + status.requests.local;
      if (engine.role === 'prefill') prefillLegs.push(status.requests.prefill);
    }
    const allPrefill = prefillLegs.reduce((a, b) => a + b, 0);
    const view = (await (await cluster.fetch(`${cluster.coordinatorUrl}/global_view`, { headers: cluster.authorization() })).json()) as {
      index: { held_blocks: number };
    };
    return {
      workload: workload.name,
      config: config.name,
      round,
      summary: report.runs[0]!.summary,
      cacheHitShare: prompt === 0 ? 0 : hit / prompt,
      localShare: legs === 0 ? 0 : local / legs,
      indexedBlocks: view.index.held_blocks,
      prefillSplit: allPrefill === 0 ? 0 : Math.max(...prefillLegs) / allPrefill,
      load: [loadAtStart, loadavg()[0]!],
    };
  } finally {
    await cluster.stop();
    for (const ext of ['json', 'html']) rmSync(`${out}.${ext}`, { force: true });
  }
}

const rows: Row[] = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const workload of WORKLOADS) {
    if (ONLY_WORKLOAD === undefined ? 'optIn' in workload : workload.name !== ONLY_WORKLOAD) continue;
    const order = round % 2 === 0 ? CONFIGS : [...CONFIGS].reverse();
    for (const config of order) {
      if (ONLY !== undefined && !ONLY.split(',').includes(config.name)) continue;
      const row = await runOne(workload, config, round);
      rows.push(row);
      const s = row.summary;
      console.log(
        `round ${round} ${workload.name} ${config.name}: goodput ${s.goodput.requestsPerS.toFixed(2)} req/s (${(s.goodput.share * 100).toFixed(1)} %), TTFT p50/p90 ${s.ttftMs.p50.toFixed(0)}/${s.ttftMs.p90.toFixed(0)} ms, cache hits ${(row.cacheHitShare * 100).toFixed(0)} %, local ${(row.localShare * 100).toFixed(0)} %, busier P ${(row.prefillSplit * 100).toFixed(0)} %, load ${row.load.map((l) => l.toFixed(1)).join('→')}, indexed ${row.indexedBlocks}, failed ${s.failed} ${JSON.stringify(s.errorsByStatus)}`,
      );
    }
  }
}
rmSync(work, { recursive: true, force: true });

// A run narrowed to one workload writes results of its own, leaving the full run's.
// What this run was narrowed or changed by, so its results say how they are made again.
const settings = [
  'KV_ROUTING_WORKLOAD',
  'KV_ROUTING_CACHE_BLOCKS',
  'KV_ROUTING_PREFILL_MS',
  'KV_ROUTING_ONLY',
  'KV_ROUTING_ROUNDS',
  'KV_ROUTING_REQUESTS',
]
  .filter((name) => process.env[name] !== undefined)
  .map((name) => `${name}=${process.env[name]}`);
// Non-default engines name their results: …-cacheN (prefix cache blocks), …-prefillM (ms a token).
const suffix =
  (ENGINE.prefixCacheBlocks === 4096 ? '' : `-cache${ENGINE.prefixCacheBlocks}`) +
  (ENGINE.prefillMsPerToken === 0.07 ? '' : `-prefill${ENGINE.prefillMsPerToken}`);
reportKvRouting(`${ONLY_WORKLOAD === undefined ? 'kv-routing' : `kv-routing-${ONLY_WORKLOAD}`}${suffix}`, rows, {
  engine: ENGINE,
  slo: SLO,
  requests: Number(REQUESTS),
  rounds: ROUNDS,
  localPrefill: LOCAL_PREFILL,
  tenants: TENANTS,
  workloads: WORKLOADS.map((w) => w.name),
  configs: CONFIGS.map((c) => c.name),
  scales: `synthetic and conversation traces: time × 0.06, lengths × 0.02; multi-tenant: ${TENANTS} tenants, time × 0.7 (heavy: × 0.4), lengths × 0.06`,
  ...(settings.length === 0 ? {} : { rerun: `${settings.join(' ')} npm run bench -- kv-routing` }),
});
