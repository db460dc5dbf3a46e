/**
 * A generated workload for when no trace fits: Poisson arrivals at a rate, prompt and completion
 * lengths from distributions, and a prefix-sharing ratio. Each request belongs to one of a few
 * prefix groups; the first `prefixShare` of its blocks are the group's (a shared system prompt or
 * document), the rest are its own. Seeded, so a run can be repeated exactly.
 */
import { lengthText, Random, sampleLength, type LengthDistribution } from './random.ts';
import type { WorkItem, Workload } from './workload.ts';

export interface SyntheticSettings {
  readonly requests: number;
  /** Mean arrivals per second. */
  readonly rate: number;
  readonly input: LengthDistribution;
  readonly output: LengthDistribution;
  /** Share of each prompt's blocks taken from its group's shared prefix, in [0, 1]. */
  readonly prefixShare: number;
  readonly prefixGroups: number;
  readonly blockTokens: number;
  readonly seed: number;
  /** A second phase from request `from` on: its own rate and lengths (a workload that shifts). */
  readonly then?: { readonly from: number; readonly rate: number; readonly input: LengthDistribution; readonly output: LengthDistribution };
}

/** Hash ids of private blocks start here, far above any group's, so the two never meet. */
const PRIVATE_HASH_BASE = 1_000_000_000;
/** Hash ids of a group's blocks: group g, block j → g × GROUP_SPAN + j. */
const GROUP_SPAN = 1_000_000;

/**
 * Generates the workload.
 * @example syntheticWorkload({ requests: 100, rate: 5, input: { kind: 'fixed', value: 1024 }, ... })
 */
export function syntheticWorkload(settings: SyntheticSettings): Workload {
  const random = new Random(settings.seed);
  const items: WorkItem[] = [];
  let at = 0;
  let nextPrivate = PRIVATE_HASH_BASE;
  for (let index = 0; index < settings.requests; index++) {
    const phase = settings.then !== undefined && index >= settings.then.from ? settings.then : settings;
    if (index > 0) at += random.exponential(1000 / phase.rate);
    const inputTokens = sampleLength(phase.input, random);
    const outputTokens = sampleLength(phase.output, random);
    const blocks = Math.ceil(inputTokens / settings.blockTokens);
    const shared = Math.floor(blocks * settings.prefixShare);
    const group = random.int(0, settings.prefixGroups - 1);
    const hashIds: number[] = [];
    for (let j = 0; j < blocks; j++) hashIds.push(j < shared ? group * GROUP_SPAN + j : nextPrivate++);
    items.push({ index, arrivalMs: at, inputTokens, outputTokens, hashIds });
  }
  const then = settings.then;
  const shift =
    then === undefined
      ? ''
      : `; from request ${then.from}: Poisson ${then.rate}/s, prompts ${lengthText(then.input)}, outputs ${lengthText(then.output)}`;
  const source =
    `synthetic: ${settings.requests} requests, Poisson ${settings.rate}/s, prefix share ${settings.prefixShare} ` +
    `over ${settings.prefixGroups} groups, seed ${settings.seed}${then === undefined ? '' : `, prompts ${lengthText(settings.input)}, outputs ${lengthText(settings.output)}`}${shift}`;
  return { kind: 'synthetic', source, blockTokens: settings.blockTokens, items };
}
