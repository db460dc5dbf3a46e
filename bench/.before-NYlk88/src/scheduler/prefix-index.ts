/**
 * Which prefill instances recently prefilled which prompt blocks: block chain hash → holders, with
 * bounded memory on both sides. Each instance keeps at most `capacity` hashes (least recently
 * prefilled out first, deepest blocks of a prompt before its shared prefix, as a radix cache evicts
 * leaves first); each hash keeps at most `holdersPerBlock` holders (the most recent), so choosing
 * among the holders of a popular system prompt never costs more than that.
 */
import { errors } from '../core/errors.ts';

export const DEFAULT_PREFIX_CAPACITY = 16_384;
export const DEFAULT_HOLDERS_PER_BLOCK = 8;

export interface PrefixIndexOptions {
  /** Most hashes remembered per instance (default 16 384; an instance's own `total_block_num` caps it further). */
  capacity?: number;
  /** Most instances remembered per hash (default 8). */
  holdersPerBlock?: number;
}

export class PrefixIndex {
  readonly capacity: number;
  readonly holdersPerBlock: number;
  readonly #holders = new Map<number, number[]>();
  /** Per instance: its hashes, oldest first (a Set iterates in insertion order; re-inserting refreshes). */
  readonly #byInstance = new Map<number, Set<number>>();

  constructor(options: PrefixIndexOptions = {}) {
    this.capacity = positiveInteger(options.capacity, DEFAULT_PREFIX_CAPACITY, 'prefix.capacity');
    this.holdersPerBlock = positiveInteger(options.holdersPerBlock, DEFAULT_HOLDERS_PER_BLOCK, 'prefix.holdersPerBlock');
  }

  /**
   * Records that an instance prefilled a prompt with these chain hashes.
   * @example index.record(p.id, prefixHashes(request, 128), p.totalBlocks);
   */
  record(id: number, hashes: readonly number[], instanceCapacity = Infinity): void {
    if (hashes.length === 0) return;
    const limit = Math.max(1, Math.min(this.capacity, instanceCapacity));
    let own = this.#byInstance.get(id);
    if (own === undefined) {
      own = new Set();
      this.#byInstance.set(id, own);
    }
    // Deepest block first, so the shared prefix ends up most recent and is evicted last.
    for (let i = hashes.length - 1; i >= 0; i--) {
      const hash = hashes[i] as number;
      const holders = this.#holders.get(hash);
      if (own.delete(hash)) {
        own.add(hash);
        if (holders !== undefined) moveToEnd(holders, id);
        continue;
      }
      own.add(hash);
      if (holders === undefined) this.#holders.set(hash, [id]);
      else {
        holders.push(id);
        if (holders.length > this.holdersPerBlock) {
          const evicted = holders.shift() as number;
          this.#byInstance.get(evicted)?.delete(hash);
        }
      }
    }
    while (own.size > limit) {
      const oldest = own.values().next().value as number;
      own.delete(oldest);
      this.#dropHolder(oldest, id);
    }
  }

  /**
   * The instances that hold a block, least recent first; empty when none.
   * @example index.holders(hash).includes(3)
   */
  holders(hash: number): readonly number[] {
    return this.#holders.get(hash) ?? NONE;
  }

  /**
   * Forgets everything an instance held (it left the cluster or changed role).
   * @example index.forget(3);
   */
  forget(id: number): void {
    const own = this.#byInstance.get(id);
    if (own === undefined) return;
    this.#byInstance.delete(id);
    for (const hash of own) this.#dropHolder(hash, id);
  }

  /**
   * How many hashes an instance holds.
   * @example index.blocksOf(3)
   */
  blocksOf(id: number): number {
    return this.#byInstance.get(id)?.size ?? 0;
  }

  /** Distinct hashes held by anyone. */
  get size(): number {
    return this.#holders.size;
  }

  #dropHolder(hash: number, id: number): void {
    const holders = this.#holders.get(hash);
    if (holders === undefined) return;
    const at = holders.indexOf(id);
    if (at >= 0) holders.splice(at, 1);
    if (holders.length === 0) this.#holders.delete(hash);
  }
}

const NONE: readonly number[] = Object.freeze([]);

function moveToEnd(holders: number[], id: number): void {
  const at = holders.indexOf(id);
  if (at < 0) {
    holders.push(id);
    return;
  }
  holders.splice(at, 1);
  holders.push(id);
}

function positiveInteger(value: number | undefined, fallback: number, path: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw errors.invalidArgument(path, 'must be a positive integer');
  return value;
}
