/**
 * The simulated engine's prefix cache: the hashes of the full KV blocks it holds, least recently
 * used first, as vLLM's automatic prefix caching keeps them. A block's hash chains its tokens with
 * every block before it, so a hit means the whole prefix up to that block is the same; a prompt's
 * cached tokens are its leading run of held blocks. Only the hashes are kept — the simulator's
 * timing is what a hit changes (prefill runs only over the tokens not cached). A prompt's blocks are
 * refreshed deepest first, so its shared prefix is the most recent and the deepest block goes first
 * (as a radix cache evicts leaves). A listener hears every block stored and evicted, and a clear,
 * as an engine publishes them as KV events (kv-events.ts).
 */

/** Told what the cache stores and evicts, in the order it happens. */
export interface PrefixCacheListener {
  /** Blocks [from, to) of the prompt were stored; block from − 1 (if any) is their parent. */
  stored(hashes: readonly string[], from: number, to: number, tokens: readonly number[], blockTokens: number): void;
  removed(hashes: readonly string[]): void;
  cleared(): void;
}

export interface PrefixCacheStats {
  /** Prompts looked up. */
  readonly lookups: number;
  /** Prompt tokens looked up, and how many of them were already cached. */
  readonly prompt_tokens: number;
  readonly hit_tokens: number;
  /** Full blocks that were hits. */
  readonly hit_blocks: number;
  /** Blocks held now, and the most it holds. */
  readonly blocks: number;
  readonly capacity: number;
}

/**
 * The chained hashes of the full `blockTokens`-token blocks of a prompt (a partial last block is
 * never cached, as in vLLM).
 * @example blockHashes([1, 2, 3, 4, 5], 2).length // 2
 */
export function blockHashes(tokens: readonly number[], blockTokens: number): string[] {
  const out: string[] = [];
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let block = 0; (block + 1) * blockTokens <= tokens.length; block++) {
    for (let i = block * blockTokens; i < (block + 1) * blockTokens; i++) {
      // Two 32-bit FNV-style lanes over the chain: cheap, and collisions are irrelevant at this size.
      hi = Math.imul(hi ^ tokens[i]!, 0x01000193) >>> 0;
      lo = Math.imul(lo ^ (tokens[i]! + hi), 0x5bd1e995) >>> 0;
    }
    out.push(`${hi.toString(16)}:${lo.toString(16)}`);
  }
  return out;
}

export class PrefixCache {
  readonly capacity: number;
  /** Hears every change (the KV-event publisher), when there is one. */
  listener: PrefixCacheListener | undefined;
  /** Block hash → nothing; Map order is recency (oldest first). */
  readonly #held = new Map<string, true>();
  #lookups = 0;
  #promptTokens = 0;
  #hitTokens = 0;
  #hitBlocks = 0;

  /**
   * A cache holding at most `capacity` blocks (0 caches nothing).
   * @example const cache = new PrefixCache(2048);
   */
  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 0) throw new RangeError('capacity must be a non-negative integer');
    this.capacity = capacity;
  }

  /**
   * Looks a prompt up and then holds all its full blocks (most recent); returns the tokens that
   * were already cached (the leading run of held blocks × `blockTokens`).
   * @example const cached = cache.admit(request.tokens, 16);
   */
  admit(tokens: readonly number[], blockTokens: number): number {
    const hashes = blockHashes(tokens, blockTokens);
    const hits = this.peek(hashes);
    this.#lookups++;
    this.#promptTokens += tokens.length;
    this.#hitTokens += hits * blockTokens;
    this.#hitBlocks += hits;
    this.#touch(hashes, tokens, blockTokens);
    return hits * blockTokens;
  }

  /**
   * Holds a prompt's full blocks without counting a lookup: a decoder that pulled them from a
   * prefiller has them too, and a later local prefill of the same prefix may reuse them.
   * @example cache.hold(request.tokens, 16);
   */
  hold(tokens: readonly number[], blockTokens: number): void {
    this.#touch(blockHashes(tokens, blockTokens), tokens, blockTokens);
  }

  /**
   * Forgets every block (vLLM's prefix-cache reset); the listener hears AllBlocksCleared.
   * @example cache.clear();
   */
  clear(): void {
    this.#held.clear();
    this.listener?.cleared();
  }

  /**
   * Whether a block is held now (tests compare the cache with what its events built elsewhere).
   * @example cache.holds(blockHashes(tokens, 16)[0])
   */
  holds(hash: string): boolean {
    return this.#held.has(hash);
  }

  /** The hashes held now, least recent first. */
  held(): IterableIterator<string> {
    return this.#held.keys();
  }

  /**
   * Leading blocks of `hashes` held now, without touching recency or counters.
   * @example cache.peek(blockHashes(tokens, 16))
   */
  peek(hashes: readonly string[]): number {
    let hits = 0;
    while (hits < hashes.length && this.#held.has(hashes[hits]!)) hits++;
    return hits;
  }

  #touch(hashes: readonly string[], tokens: readonly number[], blockTokens: number): void {
    const listener = this.listener;
    // Runs of blocks new to the cache, reported as stored (each run chained to the block before it).
    if (listener !== undefined && this.capacity > 0) {
      let from = -1;
      for (let i = 0; i <= hashes.length; i++) {
        const fresh = i < hashes.length && !this.#held.has(hashes[i]!);
        if (fresh && from < 0) from = i;
        if (!fresh && from >= 0) {
          listener.stored(hashes, from, i, tokens, blockTokens);
          from = -1;
        }
      }
    }
    for (let i = hashes.length - 1; i >= 0; i--) {
      const hash = hashes[i]!;
      this.#held.delete(hash);
      this.#held.set(hash, true);
    }
    let evicted: string[] | undefined;
    while (this.#held.size > this.capacity) {
      const oldest = this.#held.keys().next().value!;
      this.#held.delete(oldest);
      if (listener !== undefined) (evicted ??= []).push(oldest);
    }
    if (evicted !== undefined) listener!.removed(evicted);
  }

  /** Counters for `GET /sim/status`. */
  stats(): PrefixCacheStats {
    return {
      lookups: this.#lookups,
      prompt_tokens: this.#promptTokens,
      hit_tokens: this.#hitTokens,
      hit_blocks: this.#hitBlocks,
      blocks: this.#held.size,
      capacity: this.capacity,
    };
  }
}
