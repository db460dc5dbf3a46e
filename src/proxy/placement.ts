/**
 * Which instances of a pair the KV ledger refused. The scheduler cannot always know what a prompt
 * needs (a text prompt's token count is an estimate made here, and instances differ in block
 * size), so the ledger may refuse a pair the scheduler picked while another pair has room. The
 * exchange then asks the scheduler again without the instances that were short.
 */
import type { PickedPair, Reservations } from './ports.ts';
import { blocksFor } from './prompt.ts';

/** Picks per request at most when the ledger keeps refusing: each refusal excludes at least one instance. */
export const MAX_PLACEMENTS = 8;

/**
 * The instances of `pair` without room for the request (one slot, the prompt's blocks); both when
 * the ledger cannot tell, so that every refusal excludes something and the picks end.
 * @example shortInstances(pair, prompt.tokenCount, ledger) // [21]: D 21 is full, P 10 has room
 */
export function shortInstances(pair: PickedPair, promptTokens: number, ledger: Reservations): number[] {
  const { p, d } = pair;
  if (p.id === d.id) return [p.id];
  if (ledger.instanceLoad === undefined) return [p.id, d.id];
  const short = [p, d]
    .filter((instance) => {
      const load = ledger.instanceLoad?.(instance.id);
      return load === undefined || load.availSlots < 1 || load.availBlocks < blocksFor(promptTokens, instance.blockSize);
    })
    .map((instance) => instance.id);
  return short.length > 0 ? short : [p.id, d.id];
}

/**
 * `base` plus `more`, without copying when there is nothing to add.
 * @example union(failedP, shortP)
 */
export function union(base: ReadonlySet<number>, more: ReadonlySet<number>): ReadonlySet<number> {
  if (more.size === 0) return base;
  if (base.size === 0) return more;
  return new Set([...base, ...more]);
}
