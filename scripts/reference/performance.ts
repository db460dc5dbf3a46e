/**
 * The performance page, generated from what the benchmarks wrote to bench/results/: for each result,
 * the question it answers, its summary (the figures as the run printed them, ratios against a
 * baseline measured in the same run), the machine and date of the run, the command that reruns it,
 * and links to its table and JSON. A result a bench writes for the first time appears here the next
 * time the page is generated, under "Other" until it is given a group below.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const PERFORMANCE_PAGE = 'docs/performance.md';

/** Groups of results, in the page's order; a result of no group goes under "Other". */
const GROUPS: readonly (readonly [string, readonly string[]])[] = [
  [
    'The PD proxy',
    ['proxy', 'proxy-cpu', 'proxy-cpu-admission', 'proxy-ablation', 'proxy-security', 'proxy-tracing', 'sglang', 'rss', 'gc-held'],
  ],
  ['Scheduling and goodput', ['policies', 'admission', 'harness-synthetic', 'scheduler']],
  [
    "Routing on the engines' KV events",
    [
      'kv-routing',
      'kv-routing-multi-tenant-heavy',
      // The heavy multi-tenant load on engines whose prefix caches evict, prefill cost rising towards saturation.
      ...['0.4', '0.5', '0.6', '0.7'].map((ms) => `kv-routing-multi-tenant-heavy-cache256-prefill${ms}`),
      'kv-index',
      'proxy-cpu-kv',
    ],
  ],
  ['Links, the worker pool and the device runtime', ['links', 'links-floor', 'pool', 'role', 'runtime', 'platforms', 'transfer']],
  ['The control plane', ['refresh', 'json-depth', 'ledger', 'controller', 'failover']],
  ['The P:D planner', ['planner']],
];

/** Results written by a bench of another name. */
const BENCH_OF: Readonly<Record<string, string>> = { 'harness-synthetic': 'harness' };

interface Machine {
  readonly cores?: number;
  readonly cpu?: string;
  readonly memoryGiB?: number;
  readonly bun?: string;
  readonly platform?: string;
}

interface Result {
  readonly name: string;
  readonly question: string | undefined;
  readonly summary: string;
  /** How a result made with settings of its own is made again (else the bench's own command). */
  readonly rerun: string | undefined;
  readonly when: string;
}

/** The prose of a result's Markdown page: its paragraphs between the date line and the first table. */
function markdownProse(text: string): string {
  const paragraphs = text
    .split('\n\n')
    .slice(2)
    .filter((p) => !p.trimStart().startsWith('|') && !p.startsWith('#') && !p.startsWith('!['));
  return paragraphs.join('\n\n').trim();
}

function machineText(machine: Machine | undefined, date: string | undefined): string {
  const parts = [
    date?.slice(0, 10),
    machine?.cores === undefined ? undefined : `${machine.cores} cores${machine.cpu === undefined ? '' : ` (${machine.cpu})`}`,
    machine?.bun === undefined ? undefined : `Bun ${machine.bun}`,
    machine?.platform,
  ].filter((p) => p !== undefined);
  return parts.join(' · ');
}

function readResult(dir: string, name: string): Result {
  const json = JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as Record<string, unknown>;
  const mdPath = join(dir, `${name}.md`);
  const md = existsSync(mdPath) ? readFileSync(mdPath, 'utf8') : '';
  let summary = typeof json['summary'] === 'string' ? json['summary'] : markdownProse(md);
  if (json['schema'] === 'pdlink-bench-report') summary = benchReportSummary(json);
  const question = typeof json['question'] === 'string' ? json['question'] : undefined;
  // A run with settings of its own says how it is made again.
  const rerun = typeof json['rerun'] === 'string' ? json['rerun'] : undefined;
  const date = typeof json['date'] === 'string' ? json['date'] : typeof json['createdAt'] === 'string' ? json['createdAt'] : undefined;
  return { name, question, summary, rerun, when: machineText(json['machine'] as Machine | undefined, date) };
}

/** A `pdlink bench` report's figures, as its command prints them. */
function benchReportSummary(report: Record<string, unknown>): string {
  const runs = report['runs'] as { label: string; summary: Record<string, unknown> }[];
  return runs
    .map(({ label, summary }) => {
      const s = summary as {
        requests: number;
        completed: number;
        ttftMs: { p50: number; p99: number } | null;
        tpotMs: { p50: number; p99: number } | null;
        throughput: { requestsPerS: number };
        goodput: { requestsPerS: number; share: number };
      };
      const p = (x: { p50: number; p99: number } | null): string =>
        x === null ? 'n/a' : `p50 ${x.p50.toFixed(1)} ms, p99 ${x.p99.toFixed(1)} ms`;
      return `Run ${label}: ${s.completed} of ${s.requests} requests completed; TTFT ${p(s.ttftMs)}; TPOT ${p(s.tpotMs)}; throughput ${s.throughput.requestsPerS.toFixed(2)} req/s; goodput ${s.goodput.requestsPerS.toFixed(2)} req/s (${(s.goodput.share * 100).toFixed(1)} % met the SLO).`;
    })
    .join('\n\n');
}

/** A result's links and images point beside its JSON: from docs/ they point into bench/results/. */
function fromDocs(text: string): string {
  return text.replace(/(!?\[[^\]]*\]\()([^)\s]+)(\))/g, (whole, open: string, target: string, close: string) =>
    /^([a-z]+:|\/|#)/i.test(target) ? whole : `${open}../bench/results/${target}${close}`,
  );
}

/** A grouped result's companions: results named after it (`planner-off` of `planner`), such as the reports of its runs. */
function companionsOf(name: string, names: readonly string[], grouped: ReadonlySet<string>): string[] {
  return names.filter(
    (n) => !grouped.has(n) && n.startsWith(`${name}-`) && ![...grouped].some((g) => g.length > name.length && n.startsWith(`${g}-`)),
  );
}

function section(result: Result, root: string, companions: readonly string[] = []): string {
  const bench = BENCH_OF[result.name] ?? result.name;
  const command =
    result.rerun === undefined
      ? existsSync(join(root, 'bench', `${bench}.bench.ts`))
        ? `\`npm run bench -- ${bench}\``
        : 'no bench of this name today'
      : `\`${result.rerun}\``;
  const links = (['md', 'json', 'html'] as const)
    .filter((ext) => existsSync(join(root, 'bench', 'results', `${result.name}.${ext}`)))
    .map((ext) => `[${ext === 'md' ? 'table' : ext === 'json' ? 'JSON' : 'charts'}](../bench/results/${result.name}.${ext})`);
  return [
    `### ${result.name}`,
    '',
    ...(result.question === undefined ? [] : [`*${result.question}*`, '']),
    fromDocs(result.summary),
    '',
    `Run: ${result.when}. Rerun: ${command}. ${links.join(' · ')}`,
    ...(companions.length === 0
      ? []
      : [
          '',
          `Its runs: ${companions
            .map((c) => {
              const ext = existsSync(join(root, 'bench', 'results', `${c}.html`)) ? 'html' : 'json';
              return `[${c}](../bench/results/${c}.${ext})`;
            })
            .join(' · ')}`,
        ]),
  ].join('\n');
}

/**
 * The page, from the results in `root`/bench/results.
 * @example writeFileSync(PERFORMANCE_PAGE, performancePage(repoRoot));
 */
export function performancePage(root: string): string {
  const dir = join(root, 'bench', 'results');
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
  const grouped = new Set(GROUPS.flatMap(([, members]) => members));
  const groups: [string, string[]][] = GROUPS.map(([title, members]) => [title, members.filter((m) => names.includes(m))]);
  // A run may have kept only its page (a report's JSON holding every request is not kept).
  const files = readdirSync(dir);
  const runs = [
    ...new Set(files.filter((f) => f.endsWith('.json') || f.endsWith('.html')).map((f) => f.replace(/\.(json|html)$/, ''))),
  ].sort();
  const companions = new Map(GROUPS.flatMap(([, members]) => members).map((m) => [m, companionsOf(m, runs, grouped)] as const));
  const attached = new Set([...companions.values()].flat());
  const other = names.filter((n) => !grouped.has(n) && !attached.has(n));
  if (other.length > 0) groups.push(['Other', other]);
  const out = [
    '# Performance',
    '',
    '<!-- Generated by `npm run docs:reference` (scripts/docs-reference.ts) from bench/results/*.json; rerun a bench, then regenerate. -->',
    '',
    'What each benchmark in `bench/` measured, as its last run wrote it to `bench/results/`. Every figure is a ratio',
    'against a baseline measured in the same run (a bare Bun proxy, nginx, direct FFI, memcpy, the previous design),',
    'in alternating rounds, because the machines these runs come from are shared and noisy: absolute times move from',
    'run to run, ratios much less. `npm run bench` runs them all; `npm run bench -- NAME` one. Figures quoted by',
    'earlier versions of this documentation, with the commands that produced them, are kept in',
    '[the performance history](performance-history.md).',
    '',
  ];
  for (const [title, members] of groups) {
    if (members.length === 0) continue;
    out.push(`## ${title}`, '');
    for (const name of members) out.push(section(readResult(dir, name), root, companions.get(name)), '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}
