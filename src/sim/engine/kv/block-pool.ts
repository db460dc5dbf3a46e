/**
 * The free list of one simulated engine's registered KV blocks. Each allocation belongs to a
 * request id and may carry a lease: P holds a prompt's blocks for the decoder that will pull them
 * and frees them when that decoder says it is done, or when the lease runs out (the decoder died,
 * the client left before the decode leg) so blocks are never stranded.
 */
import { optionErrors } from '../../../core/errors.ts';

export interface BlockPoolOptions {
  readonly numBlocks: number;
  /** Called with the owner and block count when a lease expires and its blocks are freed. */
  readonly onExpire?: (owner: string, blocks: number) => void;
  /** Timer functions (tests substitute a manual clock). */
  readonly setTimer?: (fn: () => void, ms: number) => unknown;
  readonly clearTimer?: (timer: unknown) => void;
}

interface Holding {
  readonly blocks: Uint32Array;
  timer: unknown;
}

export class BlockPool {
  readonly size: number;
  /** Free block indices; allocation pops from the end, release pushes back. */
  readonly #free: number[];
  readonly #held = new Map<string, Holding>();
  readonly #onExpire: ((owner: string, blocks: number) => void) | undefined;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (timer: unknown) => void;
  #expired = 0;

  /**
   * A pool of blocks 0 … numBlocks−1, all free.
   * @example const pool = new BlockPool({ numBlocks: 1024 });
   */
  constructor(options: BlockPoolOptions) {
    if (!Number.isSafeInteger(options.numBlocks) || options.numBlocks < 1) throw new RangeError('numBlocks must be a positive integer');
    this.size = options.numBlocks;
    // Reversed so the first allocations get the low indices, which reads well in logs.
    this.#free = Array.from({ length: options.numBlocks }, (_, i) => options.numBlocks - 1 - i);
    this.#onExpire = options.onExpire;
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms).unref());
    this.#clearTimer = options.clearTimer ?? ((timer) => clearTimeout(timer as ReturnType<typeof setTimeout>));
  }

  get free(): number {
    return this.#free.length;
  }

  get used(): number {
    return this.size - this.#free.length;
  }

  /** Requests holding blocks. */
  get owners(): number {
    return this.#held.size;
  }

  /** Leases that ran out since the pool was made. */
  get expired(): number {
    return this.#expired;
  }

  /**
   * Takes `count` free blocks for `owner`, or returns undefined when fewer are free (nothing is
   * taken); a lease frees them after `leaseMs`. An owner holds one allocation at a time.
   * @example const blocks = pool.allocate('req-1', 3, 30_000);
   */
  allocate(owner: string, count: number, leaseMs?: number): Uint32Array | undefined {
    if (this.#held.has(owner)) throw new Error(`request ${JSON.stringify(owner)} already holds blocks`);
    if (!Number.isSafeInteger(count) || count < 0) throw new RangeError('count must be a non-negative integer');
    if (count > this.#free.length) return undefined;
    const blocks = new Uint32Array(count);
    for (let i = 0; i < count; i++) blocks[i] = this.#free.pop()!;
    const holding: Holding = { blocks, timer: undefined };
    if (leaseMs !== undefined) {
      holding.timer = this.#setTimer(() => {
        if (this.#held.get(owner) !== holding) return;
        this.#expired++;
        this.#drop(owner, holding);
        this.#onExpire?.(owner, count);
      }, leaseMs);
    }
    this.#held.set(owner, holding);
    return blocks;
  }

  /**
   * The blocks `owner` holds, if any.
   * @example pool.holding('req-1')?.length
   */
  holding(owner: string): Uint32Array | undefined {
    return this.#held.get(owner)?.blocks;
  }

  /**
   * Frees the blocks of `owner`; returns how many were freed (0 when it held none).
   * @example pool.release('req-1')
   */
  release(owner: string): number {
    const holding = this.#held.get(owner);
    if (holding === undefined) return 0;
    if (holding.timer !== undefined) this.#clearTimer(holding.timer);
    this.#drop(owner, holding);
    return holding.blocks.length;
  }

  /** Frees everything and stops every lease timer. */
  clear(): void {
    for (const owner of [...this.#held.keys()]) this.release(owner);
  }

  #drop(owner: string, holding: Holding): void {
    this.#held.delete(owner);
    for (let i = holding.blocks.length - 1; i >= 0; i--) this.#free.push(holding.blocks[i]!);
  }
}
