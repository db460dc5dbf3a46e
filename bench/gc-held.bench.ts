/**
 * Question: what does the state a Coordinator holds for a 4096-instance cluster (registry, scheduler,
 * ledger) cost each full garbage collection, against holding the same snapshot as `JSON.parse`
 * built it (the least any holder of that data keeps)?
 *
 * Each mode runs in a fresh process with the Coordinator's modules loaded and a Coordinator created:
 * `empty` applies nothing; `parsed` keeps the parsed 4096-instance snapshot in a variable; `held` has
 * the Coordinator apply two all-changed 4096-instance snapshots through its refresh handler and keeps
 * nothing else; `emptied` does the same and then applies an empty snapshot, so it has run (and
 * compiled) the same code as `held` without holding its instances. The state's cost is `held` less
 * `emptied`; the parsed snapshot's is `parsed` less `empty`. Each process times `Bun.gc(true)` (a
 * full, synchronous collection on this thread) 15 times, each after a timer tick so that no stack
 * frame holds a parsed body, and reports the median with the live heap's size and object count.
 * Rounds alternate the modes' order.
 *
 * Run: bun bench/gc-held.bench.ts   → bench/results/gc-held.{json,md}
 */
import { heapStats } from 'bun:jsc';
import { markdownTable, spread, times, writeResults } from './lib.ts';
import { refreshBodies } from './refresh-load.ts';

const ROUNDS = Number(process.env['GC_HELD_ROUNDS'] ?? 8);
const COLLECTIONS = 15;
const MODES = ['empty', 'emptied', 'parsed', 'held'] as const;
type Mode = (typeof MODES)[number];

interface Sample {
  readonly ms: number;
  readonly heapMiB: number;
  readonly objects: number;
}

/** Child: builds the mode's state, then times full collections. */
async function child(mode: Mode): Promise<void> {
  const { createCoordinator } = await import('../src/apps/coordinator.ts');
  const { REFRESH_PATH } = await import('../src/http/refresh.ts');
  const coordinator = createCoordinator({ bodyLimitBytes: 8 * 1024 * 1024 });
  let kept: unknown;
  if (mode !== 'empty') {
    const texts = refreshBodies(4096, 'loads');
    if (mode === 'parsed') kept = JSON.parse(texts[0]!);
    else {
      for (const text of mode === 'held' ? texts : [...texts, '{"ids":[],"instances":[]}']) {
        const request = new Request(`http://127.0.0.1${REFRESH_PATH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': String(text.length) },
          body: text,
        });
        const response = await coordinator.managementPosts[REFRESH_PATH]!(request, undefined);
        if (response.status !== 200) throw new Error(`refresh answered ${response.status}`);
      }
    }
  }
  const tick = () => new Promise((resolve) => setTimeout(resolve, 2));
  const ms: number[] = [];
  for (let i = 0; i < COLLECTIONS; i++) {
    await tick();
    const started = performance.now();
    Bun.gc(true);
    ms.push(performance.now() - started);
  }
  const stats = heapStats();
  const sample: Sample = { ms: spread(ms).median, heapMiB: stats.heapSize / 1048576, objects: stats.objectCount };
  console.log(JSON.stringify(sample));
  // Keeps the parsed snapshot alive until after the collections.
  if (kept === null) console.log('');
  await coordinator.close();
  process.exit(0);
}

async function run(mode: Mode): Promise<Sample> {
  const proc = Bun.spawn([process.execPath, import.meta.path, 'child', mode], { stdout: 'pipe', stderr: 'inherit' });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(`${mode} child failed`);
  return JSON.parse(out.trim().split('\n')[0]!) as Sample;
}

async function main(): Promise<void> {
  const samples: Record<Mode, Sample[]> = { empty: [], emptied: [], parsed: [], held: [] };
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? MODES : [...MODES].reverse();
    const got = {} as Record<Mode, Sample>;
    for (const mode of order) got[mode] = await run(mode);
    for (const mode of MODES) samples[mode].push(got[mode]);
    // What each adds to a full collection: the state over the same code without it, the parsed snapshot over nothing.
    ratios.push((got.held.ms - got.emptied.ms) / (got.parsed.ms - got.empty.ms));
  }
  const median = (mode: Mode, key: keyof Sample) => spread(samples[mode].map((s) => s[key])).median;
  const ratio = spread(ratios);
  const rows = MODES.map((mode) => [
    mode,
    median(mode, 'ms').toFixed(2),
    median(mode, 'heapMiB').toFixed(1),
    Math.round(median(mode, 'objects')),
  ]);
  const summary =
    `A full collection (Bun.gc(true), median of ${COLLECTIONS} per process, medians of ${ROUNDS} alternating rounds, a fresh process each): ` +
    `${median('empty', 'ms').toFixed(2)} ms for a Coordinator that holds no instances and has applied none, ${median('parsed', 'ms').toFixed(2)} ms ` +
    `with a parsed 4096-instance snapshot held beside it; ${median('held', 'ms').toFixed(2)} ms for a Coordinator holding those 4096 instances, ` +
    `${median('emptied', 'ms').toFixed(2)} ms for one that applied them and then an empty snapshot (the same code run, no instances held). ` +
    `What the Coordinator's state adds to a collection is ${times(ratio.median)} what the parsed snapshot adds (p10 ${times(ratio.p10)}, p90 ${times(ratio.p90)}).`;
  console.log(summary);
  writeResults('gc-held', {
    json: { rounds: ROUNDS, collectionsPerProcess: COLLECTIONS, samples, ratios, ratio },
    markdownTable: markdownTable(['state', 'full collection ms (median)', 'live heap MiB', 'live objects'], rows),
    summary,
  });
}

if (process.argv[2] === 'child') await child(process.argv[3] as Mode);
else await main();
