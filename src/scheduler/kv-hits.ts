/**
 * How much of one request's prompt each instance already holds, worked out once per pick for the
 * precise_prefix policy: exactly from the engines' KV events for an instance that publishes them
 * (src/kv/, keyed in its model's namespace at its block size), and from pdlink's own record of what
 * each P prefilled for one that does not (the approximate index cache_affinity uses), so instances
 * without an events endpoint are scored as before. Read through blocksOf()/tokensOf() by the policy
 * and by decode-first's rule.
 *
 * Hashing the prompt is most of a pick's cost, so it is done once per block size (keys depend on the
 * tokens, the block size and the seed, not on the model), and the keys of the last prompt are kept:
 * the proxy hands the same token array to a retry's pick and to pickDecode(), which then only match.
 * A copy of that prompt is kept with its keys and compared before they are reused, so a caller that
 * refills one array between picks still gets the keys of what the array holds now.
 */
import { MatchResult } from '../kv/kv-index.ts';
import { tokenWords } from '../kv/block-keys.ts';
import type { KvState } from '../kv/kv-state.ts';
import type { PrefixIndex } from './prefix-index.ts';

/** What one pick knows of the cached prefix of its prompt on each instance. */
export class KvHits {
  /** Prompt tokens (0 when the prompt is text the Coordinator could not tokenize). */
  promptTokens = 0;
  /** Instance id → cached prompt tokens, for instances with any. */
  readonly #tokens = new Map<number, number>();
  /** Instance ids whose figure is exact (from KV events). */
  readonly #exact = new Set<number>();
  readonly #state: KvState;
  readonly #approx: PrefixIndex;
  readonly #result = new MatchResult();
  /** Block size → the keys of the last prompt at that size (its first `blocks` pairs). */
  readonly #keys = new Map<number, { words: Uint32Array; blocks: number }>();
  /** The prompt whose keys #keys holds, and a copy of its tokens (its first #copied words). */
  #keyed: ArrayLike<number> | undefined;
  #copy: Uint32Array = new Uint32Array(4096);
  #copied = 0;
  /** Source id → instance id (NaN when the source's instance is not a refresh id). */
  #instanceOfSource: number[] = [];
  /** Block size → the models publishers key blocks in at that size. */
  #namespaces = new Map<number, string[]>();
  #sourcesSeen = -1;

  constructor(state: KvState, approx: PrefixIndex) {
    this.#state = state;
    this.#approx = approx;
  }

  /**
   * Works out the hits of a prompt: `tokens` for the exact index (in the namespace of each
   * publisher's model and block size), `hashes()` (the approximate index's keys, `hashBlock` tokens
   * each, asked for only while that index holds any) for instances without events.
   * @example hits.begin(tokens, () => hashes, 128);
   */
  begin(tokens: ArrayLike<number> | undefined, hashes: () => readonly number[], hashBlock: number): void {
    this.#tokens.clear();
    this.promptTokens = tokens?.length ?? 0;
    this.#mapSources();
    if (tokens !== undefined && tokens.length > 0 && this.#namespaces.size > 0) {
      if (!this.#isKeyed(tokens)) {
        this.#keyed = undefined;
        this.#copy = tokenWords(tokens, tokens.length, this.#copy, 'promptTokens');
        this.#copied = tokens.length;
        this.#keyed = tokens;
        for (const keys of this.#keys.values()) keys.blocks = -1;
      }
      for (const [blockSize, models] of this.#namespaces) {
        const keys = this.#keysOf(blockSize);
        for (const model of models) this.#exactHits(keys.words, keys.blocks, model, blockSize);
      }
    }
    if (this.#approx.size > 0) this.#approxHits(hashes(), hashBlock);
  }

  /** Cached prompt tokens on an instance (0 when none). */
  tokensOf(id: number): number {
    return this.#tokens.get(id) ?? 0;
  }

  /** Whether the instance's figure comes from its own KV events. */
  exact(id: number): boolean {
    return this.#exact.has(id);
  }

  /** Every instance with a hit, and its cached tokens. */
  entries(): IterableIterator<[number, number]> {
    return this.#tokens.entries();
  }

  /** Whether `tokens` is the array last keyed and still holds what it held then. */
  #isKeyed(tokens: ArrayLike<number>): boolean {
    if (tokens !== this.#keyed || tokens.length !== this.#copied) return false;
    const copy = this.#copy;
    for (let i = 0; i < tokens.length; i++) if (tokens[i] !== copy[i]) return false;
    return true;
  }

  /** The keyed prompt's keys at a block size: computed once per prompt and size. */
  #keysOf(blockSize: number): { words: Uint32Array; blocks: number } {
    let keys = this.#keys.get(blockSize);
    if (keys === undefined) this.#keys.set(blockSize, (keys = { words: new Uint32Array(512), blocks: -1 }));
    if (keys.blocks >= 0) return keys;
    const blocks = Math.floor(this.#copied / blockSize);
    if (keys.words.length < 2 * blocks) keys.words = new Uint32Array(2 * blocks);
    keys.blocks = this.#state.hasher.keys(this.#copy.subarray(0, this.#copied), blockSize, keys.words);
    return keys;
  }

  #exactHits(keys: Uint32Array, blocks: number, model: string, blockSize: number): void {
    const state = this.#state;
    const ns = state.namespace(model, blockSize, '', '', false);
    if (ns < 0) return;
    state.index.match(ns, keys, blocks, this.#result);
    const r = this.#result;
    for (let i = 0; i < r.count; i++) {
      const id = this.#instanceOfSource[r.sources[i]!];
      if (id === undefined || Number.isNaN(id)) continue;
      // An instance's DP ranks are one target: the deepest of them counts.
      const cached = r.depth[i]! * blockSize;
      if (cached > (this.#tokens.get(id) ?? 0)) this.#tokens.set(id, cached);
    }
  }

  #approxHits(hashes: readonly number[], hashBlock: number): void {
    if (hashes.length === 0) return;
    const depth = new Map<number, number>();
    for (let level = 0; level < hashes.length; level++) {
      const holders = this.#approx.holders(hashes[level]!);
      let extended = false;
      for (const id of holders) {
        if ((depth.get(id) ?? 0) === level) {
          depth.set(id, level + 1);
          extended = true;
        }
      }
      if (!extended) break;
    }
    for (const [id, blocks] of depth) if (!this.#exact.has(id)) this.#tokens.set(id, blocks * hashBlock);
  }

  /** Source → instance id, rebuilt only when the sources changed. */
  #mapSources(): void {
    const state = this.#state;
    if (this.#sourcesSeen === state.generation) return;
    const list: number[] = [];
    const namespaces = new Map<number, string[]>();
    this.#exact.clear();
    for (const [source, spec] of state.sources()) {
      const models = namespaces.get(spec.blockSize) ?? [];
      if (!models.includes(spec.model)) models.push(spec.model);
      namespaces.set(spec.blockSize, models);
      const id = /^\d{1,15}$/.test(spec.instance) ? Number(spec.instance) : NaN;
      list[source] = id;
      // Every instance that publishes is exact, hit or not.
      if (!Number.isNaN(id)) this.#exact.add(id);
    }
    for (let i = 0; i < list.length; i++) if (list[i] === undefined) list[i] = NaN;
    this.#instanceOfSource = list;
    this.#namespaces = namespaces;
    this.#sourcesSeen = state.generation;
  }
}
