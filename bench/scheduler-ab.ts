/**
 * Same-run A/B of two versions of the scheduler: the cost of one pick (and of a pick with its
 * reservation churn) at 4096 instances for each built-in policy, the two checkouts' schedulers
 * loaded into this one process and measured in alternating rounds on the same workload. To compare
 * a change with the code before it, point A at another checkout.
 *
 * Run: bun bench/scheduler-ab.ts <A checkout> <B checkout> [rounds]
 *   e.g. git worktree add /tmp/before HEAD~1 && bun bench/scheduler-ab.ts /tmp/before . 10
 */
import { resolve } from 'node:path';
import { msPerCall, seeded, sharedPrefixPrompts, spread, times } from './lib.ts';

interface Tree {
  readonly ClusterRegistry: new () => { apply(snapshot: unknown): unknown };
  readonly parseRefresh: (body: unknown) => unknown;
  readonly createScheduler: (options: Record<string, unknown>) => {
    pick(request: Record<string, unknown>): { ok: boolean; message?: string; p: { id: number }; d: { id: number } };
    recordPrefill(id: number, request: Record<string, unknown>): void;
  };
  readonly TestLoads: new () => { reserve(id: number, slots: number, blocks: number): void };
  readonly exampleSnapshot: (size: number) => unknown;
}

async function load(root: string): Promise<Tree> {
  const at = (path: string): Promise<Record<string, unknown>> => import(resolve(root, path));
  const [registry, refresh, scheduler, doubles, examples] = await Promise.all([
    at('src/cluster/registry.ts'),
    at('src/schema/refresh.ts'),
    at('src/scheduler/scheduler.ts'),
    at('test/doubles/scheduler.ts'),
    at('test/doubles/refresh-examples.ts'),
  ]);
  return {
    ClusterRegistry: registry['ClusterRegistry'] as Tree['ClusterRegistry'],
    parseRefresh: refresh['parseRefresh'] as Tree['parseRefresh'],
    createScheduler: scheduler['createScheduler'] as Tree['createScheduler'],
    TestLoads: doubles['TestLoads'] as Tree['TestLoads'],
    exampleSnapshot: examples['exampleSnapshot'] as Tree['exampleSnapshot'],
  };
}

const [rootA, rootB] = process.argv.slice(2, 4).map((r) => resolve(r!));
if (rootA === undefined || rootB === undefined) {
  console.error('usage: bun bench/scheduler-ab.ts <A checkout> <B checkout> [rounds]');
  process.exit(2);
}
const ROUNDS = Number(process.argv[4] ?? 10);
const SIZE = 4096;
const BLOCK = 128;
const PROMPTS = sharedPrefixPrompts(64, BLOCK);
const POLICIES = ['load_balance', 'round_robin', 'power_of_two', 'cache_affinity'] as const;

/** One call = one pick, with its reservation churn when `churn`. */
function workload(tree: Tree, policy: (typeof POLICIES)[number], churn: boolean): () => void {
  const registry = new tree.ClusterRegistry();
  registry.apply(tree.parseRefresh(tree.exampleSnapshot(SIZE)));
  const loads = new tree.TestLoads();
  const decode = policy === 'cache_affinity' ? 'load_balance' : policy;
  const scheduler = tree.createScheduler({
    cluster: registry,
    loads,
    policy: { prefill: policy, decode },
    blockSize: BLOCK,
    rng: seeded(42),
  });
  const inFlight: [number, number][] = [];
  let n = 0;
  return () => {
    const request = policy === 'cache_affinity' ? { promptTokens: PROMPTS[n++ % PROMPTS.length], promptBlocks: 8 } : { promptBlocks: 8 };
    const result = scheduler.pick(request);
    if (!result.ok) throw new Error(`pick failed: ${result.message}`);
    if (policy === 'cache_affinity') scheduler.recordPrefill(result.p.id, request);
    if (!churn) return;
    loads.reserve(result.p.id, 1, 8);
    loads.reserve(result.d.id, 1, 8);
    inFlight.push([result.p.id, result.d.id]);
    if (inFlight.length > 64) {
      const [p, d] = inFlight.shift()!;
      loads.reserve(p, -1, -8);
      loads.reserve(d, -1, -8);
    }
  };
}

const trees = { a: await load(rootA), b: await load(rootB) };
console.log(`scheduler A/B at ${SIZE} instances, ${ROUNDS} alternating rounds: A ${rootA}, B ${rootB}`);
for (const policy of POLICIES) {
  for (const churn of [false, true]) {
    const steps = { a: workload(trees.a, policy, churn), b: workload(trees.b, policy, churn) };
    for (const step of Object.values(steps)) msPerCall(step, 300);
    const ratios: number[] = [];
    const us = { a: [] as number[], b: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of round % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) us[name].push(msPerCall(steps[name], 150) * 1000);
      ratios.push(us.b.at(-1)! / us.a.at(-1)!);
    }
    const r = spread(ratios);
    const label = `${policy}${churn ? ' +churn' : ''}`.padEnd(22);
    console.log(
      `${label} A ${spread(us.a).median.toFixed(3)} µs, B ${spread(us.b).median.toFixed(3)} µs: B/A ${times(r.median)} (p10 ${times(r.p10)}, p90 ${times(r.p90)})`,
    );
  }
}
