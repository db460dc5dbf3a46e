/**
 * The (P, D) links a refresh says are gone: a decode instance whose `peers` no longer list a
 * prefill instance they listed before. The Coordinator releases the reservations on such a pair
 * (the KV blocks cannot move over a link that is not there); a removed instance needs no entry
 * here, since its removal already ends every record on it.
 */
import type { RegistryDiff } from './instance.ts';

/** One link between a prefill and a decode instance, by instance id. */
export interface InstancePair {
  readonly p: number;
  readonly d: number;
}

/**
 * Pairs whose link a refresh dropped, in the order the diff lists the decode instances.
 * @example for (const { p, d } of lostLinks(diff)) ledger.linkLost(p, d);
 */
export function lostLinks(diff: RegistryDiff): InstancePair[] {
  const lost: InstancePair[] = [];
  for (const { before, after } of diff.updated) {
    if (before.role !== 'decode' || after.role !== 'decode' || samePrefix(before.peers, after.peers)) continue;
    const still = new Set(after.peers);
    for (const p of before.peers) if (!still.has(p)) lost.push({ p, d: after.id });
  }
  return lost;
}

/**
 * Whether `after` starts with every id of `before`, in order: then nothing was dropped. This is the
 * common case (a refresh that moved only free slots), decided without building a set.
 */
function samePrefix(before: readonly number[], after: readonly number[]): boolean {
  if (before === after) return true;
  if (after.length < before.length) return false;
  for (let i = 0; i < before.length; i++) if (before[i] !== after[i]) return false;
  return true;
}
