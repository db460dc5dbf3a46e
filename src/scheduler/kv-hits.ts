/**
 * How much of one request's prompt each instance already holds, worked out once per pick for the
 * precise_prefix policy: exactly from the engines' KV events for an instance that publishes them
 * (src/kv/, keyed in its model's namespace at its block size), and from pdlink's own record of what
 * each P prefilled for one that does not (the approximate index cache_affinity uses), so instances
 * without an events endpoint are scored as before. Read through blocksOf()/tokensOf() by the policy
 * and by decode-first's rule.
 */
import { MatchResult } from '../kv/kv-index.ts';
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
  #keys = new Uint32Array(512);
  /** Source id → instance id (NaN when the source's instance is not a refresh id). */
  #instanceOfSource: number[] = [];
  /** The (model, block size) pairs publishers key blocks in. */
  #namespaces: [string, number][] = [];
  #sourcesSeen = -1;

  constructor(state: KvState, approx: PrefixIndex) {
    this.#state = state;
    this.#approx = approx;
  }

  /**
   * Works out the hits of a prompt: `tokens` for the exact index (in the namespace of each
   * publisher's model and block size), `hashes` (the approximate index's keys, `hashBlock` tokens
   * each) for instances without events.
   * @example hits.begin(tokens, hashes, 128);
   */
  begin(tokens: ArrayLike<number> | undefined, hashes: readonly number[], hashBlock: number): void {
    this.#tokens.clear();
    this.promptTokens = tokens?.length ?? 0;
    this.#mapSources();
    if (tokens !== undefined && tokens.length > 0)
      for (const [model, blockSize] of this.#namespaces) this.#exactHits(tokens, model, blockSize);
    this.#approxHits(hashes, hashBlock);
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

  #exactHits(tokens: ArrayLike<number>, model: string, blockSize: number): void {
    const state = this.#state;
    const ns = state.namespace(model, blockSize, '', '', false);
    if (ns < 0) return;
    const blocks = Math.floor(tokens.length / blockSize);
    if (this.#keys.length < 2 * blocks) this.#keys = new Uint32Array(2 * blocks);
    state.hasher.keys(tokens, blockSize, this.#keys, undefined, 'promptTokens');
    state.index.match(ns, this.#keys, blocks, this.#result);
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
    const namespaces = new Map<string, [string, number]>();
    this.#exact.clear();
    for (const [source, spec] of state.sources()) {
      namespaces.set(`${spec.model}\u0000${spec.blockSize}`, [spec.model, spec.blockSize]);
      const id = /^\d{1,15}$/.test(spec.instance) ? Number(spec.instance) : NaN;
      list[source] = id;
      // Every instance that publishes is exact, hit or not.
      if (!Number.isNaN(id)) this.#exact.add(id);
    }
    for (let i = 0; i < list.length; i++) if (list[i] === undefined) list[i] = NaN;
    this.#instanceOfSource = list;
    this.#namespaces = [...namespaces.values()];
    this.#sourcesSeen = state.generation;
  }
}
