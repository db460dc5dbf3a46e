/**
 * What a benchmark sends, independent of where it came from: one item per request with its arrival
 * time, prompt and completion lengths, and the prompt's block hashes. Trace replay and the synthetic
 * generator both produce these, and prompts are built from the hashes (prompt-text.ts), so a
 * simulator or scheduler that understands prefix caching sees the same sharing a real trace has.
 */

export interface WorkItem {
  /** Position in the workload, from 0; the request id carries it. */
  readonly index: number;
  /** When to send, in ms from the start of the run (open loop); ignored by the closed loop. */
  readonly arrivalMs: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** One hash per block of the prompt, in order; equal leading runs mean a shared prefix. */
  readonly hashIds: readonly number[];
  /** The tenant and priority class it is sent as (`--tenants`; see tenants.ts). */
  readonly tenant?: string;
  readonly priority?: string;
}

export interface Workload {
  /** `trace` for a replayed file, `synthetic` for generated arrivals. */
  readonly kind: 'trace' | 'synthetic';
  /** The trace file, or a one-line description of the synthetic settings. */
  readonly source: string;
  /** Tokens per hash block in the generated prompts (512 × the length scale for Mooncake traces). */
  readonly blockTokens: number;
  readonly items: readonly WorkItem[];
}

/**
 * Share of all blocks that extend a prefix seen earlier (the traces' README calls it leading-block reuse).
 * @example prefixReuse([{ hashIds: [1, 2] }, { hashIds: [1, 3] }]) // 0.25
 */
export function prefixReuse(items: readonly Pick<WorkItem, 'hashIds'>[]): number {
  const seen = new Set<string>();
  let reused = 0;
  let total = 0;
  for (const item of items) {
    let prefix = '';
    let extending = true;
    for (const hash of item.hashIds) {
      prefix += `${hash},`;
      total++;
      if (extending && seen.has(prefix)) reused++;
      else extending = false;
      seen.add(prefix);
    }
  }
  return total === 0 ? 0 : reused / total;
}
