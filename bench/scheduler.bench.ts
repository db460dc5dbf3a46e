/**
 * One question: does the cost of a scheduler pick stay flat as the cluster grows? For each policy,
 * the average cost per pick at 256 and 4096 instances is measured against the cost at 16, in
 * alternating rounds of one run (the 16-instance scheduler is the baseline). Goal: at 4096 ≤ 4×
 * the cost at 16.
 *
 * Clusters are the registry's own example snapshots: groups of 16 (8 P + 8 D, full P↔D mesh).
 * Two workloads per policy:
 * - `pick`: loads as reported, nothing reserved (the pick alone);
 * - `pick+churn`: each pick reserves 1 slot and 8 blocks on its P and D and the oldest of 64
 *   in-flight requests is released, so every pick also pays the index updates its reservations
 *   cause (what a Coordinator under steady traffic does).
 * cache_affinity requests draw from 64 prompts of 8 blocks (128 tokens each) sharing a 4-block
 * system prompt; each pick hashes its prompt (a fresh request object) and records the prefill.
 *
 * Run: node_modules/.bin/bun bench/scheduler.bench.ts   (--quick: short rounds, nothing written)
 */
import { ClusterRegistry } from '../src/cluster/registry.ts';
import { exampleSnapshot } from '../test/doubles/refresh-examples.ts';
import { parseRefresh } from '../src/schema/refresh.ts';
import { createScheduler, type PdScheduler } from '../src/scheduler/scheduler.ts';
import { TestLoads } from '../test/doubles/scheduler.ts';
import type { PolicyName } from '../src/scheduler/types.ts';
import { alternate, markdownTable, msPerCall, seeded, sharedPrefixPrompts, spread, times, writeResults } from './lib.ts';

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 2 : 10;
const ROUND_MS = QUICK ? 20 : 150;
const BASE_SIZE = 16;
const SIZES = [256, 4096];
const GOAL = 4;
const IN_FLIGHT = 64;
const POLICIES: PolicyName[] = ['load_balance', 'round_robin', 'power_of_two', 'cache_affinity'];
const WORKLOADS = ['pick', 'pick+churn'] as const;
type Workload = (typeof WORKLOADS)[number];

const BLOCK = 128;
const PROMPTS = sharedPrefixPrompts(64, BLOCK);

/** One call of the returned function = one pick (plus, with churn, its reservation and a release). */
function workload(size: number, policy: PolicyName, kind: Workload): { step: () => void; scheduler: PdScheduler } {
  const registry = new ClusterRegistry();
  registry.apply(parseRefresh(exampleSnapshot(size)));
  const loads = new TestLoads();
  const decode = policy === 'cache_affinity' ? 'load_balance' : policy;
  const scheduler = createScheduler({ cluster: registry, loads, policy: { prefill: policy, decode }, blockSize: BLOCK, rng: seeded(42) });
  const inFlight: [number, number][] = [];
  let n = 0;
  const step = (): void => {
    const request =
      policy === 'cache_affinity' ? { promptTokens: PROMPTS[n++ % PROMPTS.length] as number[], promptBlocks: 8 } : { promptBlocks: 8 };
    const result = scheduler.pick(request);
    if (!result.ok) throw new Error(`pick failed at ${size} instances: ${result.message}`);
    if (policy === 'cache_affinity') scheduler.recordPrefill(result.p.id, request);
    if (kind === 'pick') return;
    loads.reserve(result.p.id, 1, 8);
    loads.reserve(result.d.id, 1, 8);
    inFlight.push([result.p.id, result.d.id]);
    if (inFlight.length > IN_FLIGHT) {
      const [p, d] = inFlight.shift() as [number, number];
      loads.reserve(p, -1, -8);
      loads.reserve(d, -1, -8);
    }
  };
  return { step, scheduler };
}

interface Row {
  policy: PolicyName;
  workload: Workload;
  size: number;
  baseUs: number;
  subjectUs: number;
  ratio: ReturnType<typeof spread>;
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (const policy of POLICIES) {
    for (const kind of WORKLOADS) {
      const base = workload(BASE_SIZE, policy, kind);
      for (const size of SIZES) {
        const subject = workload(size, policy, kind);
        // Warm both so the JIT and the prefix index are in steady state before measuring.
        msPerCall(base.step, ROUND_MS);
        msPerCall(subject.step, ROUND_MS);
        const result = await alternate(
          ROUNDS,
          () => msPerCall(base.step, ROUND_MS),
          () => msPerCall(subject.step, ROUND_MS),
        );
        const row: Row = {
          policy,
          workload: kind,
          size,
          baseUs: spread(result.baseline).median * 1000,
          subjectUs: spread(result.subject).median * 1000,
          ratio: spread(result.ratios),
        };
        rows.push(row);
        console.log(
          `${policy.padEnd(15)} ${kind.padEnd(11)} ${String(size).padStart(5)}: ${row.subjectUs.toFixed(3)} µs vs ${row.baseUs.toFixed(3)} µs at ${BASE_SIZE} → ${times(row.ratio.median)}`,
        );
        subject.scheduler.close();
      }
      base.scheduler.close();
    }
  }

  const worst = rows.filter((r) => r.size === 4096).reduce((a, b) => (b.ratio.median > a.ratio.median ? b : a));
  const met = rows.filter((r) => r.size === 4096).every((r) => r.ratio.median <= GOAL);
  const summary = [
    `Pick cost at 4096 instances / at ${BASE_SIZE} (median of ${ROUNDS} alternating rounds): ` +
      rows
        .filter((r) => r.size === 4096)
        .map((r) => `${r.policy} ${r.workload} ${times(r.ratio.median)}`)
        .join(', ') +
      `. Goal ≤ ${GOAL}×: ${met ? 'met' : 'NOT met'} (worst: ${worst.policy} ${worst.workload}, ${times(worst.ratio.median)}).`,
  ].join('\n');
  const table = markdownTable(
    ['policy', 'workload', 'instances', `µs per pick`, `µs at ${BASE_SIZE}`, `cost / cost at ${BASE_SIZE} (median)`, 'p10–p90'],
    rows.map((r) => [
      r.policy,
      r.workload,
      r.size,
      r.subjectUs.toFixed(3),
      r.baseUs.toFixed(3),
      times(r.ratio.median),
      `${times(r.ratio.p10)}–${times(r.ratio.p90)}`,
    ]),
  );
  console.log(`\n${summary}\n\n${table}`);
  if (QUICK) return;
  writeResults('scheduler', {
    json: {
      question: `Does a pick's cost stay flat from ${BASE_SIZE} to 4096 instances? Goal: cost(4096) ≤ ${GOAL}× cost(${BASE_SIZE}).`,
      setup: {
        groupSize: 16,
        prefillPerGroup: 8,
        decodePerGroup: 8,
        rounds: ROUNDS,
        roundMs: ROUND_MS,
        inFlight: IN_FLIGHT,
        promptBlocks: 8,
        blockSize: BLOCK,
      },
      goalMet: met,
      rows,
    },
    markdownTable: table,
    summary,
  });
}

await main();
