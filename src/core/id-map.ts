/**
 * A map keyed by instance id, for the structures a refresh updates per instance (the registry, the
 * scheduler's nodes, the ledger's accounts). Ids are non-negative integers, in practice small and
 * dense (clusters number their instances from 0): those live in array slots, which cost a fraction
 * of a Map lookup, and a 4096-instance refresh pays several lookups per instance. Any other key
 * goes to a Map, so every id works; the values themselves are never `undefined`.
 */

/** Ids up to this live in the array (at most 16 K slots, 128 KiB). */
const DENSE_MAX = 16_384;

const isDense = (id: number): boolean => (id | 0) === id && id >= 0 && id <= DENSE_MAX;

export class IdMap<T> {
  readonly #dense: (T | undefined)[] = [];
  readonly #sparse = new Map<number, T>();
  #denseSize = 0;

  get size(): number {
    return this.#denseSize + this.#sparse.size;
  }

  /**
   * The value of an id, or undefined.
   * @example nodes.get(3)?.load
   */
  get(id: number): T | undefined {
    return isDense(id) ? this.#dense[id] : this.#sparse.get(id);
  }

  /**
   * Whether the id has a value.
   * @example if (!accounts.has(id)) accounts.set(id, open(id));
   */
  has(id: number): boolean {
    return this.get(id) !== undefined;
  }

  /**
   * Sets the value of an id.
   * @example nodes.set(node.id, node);
   */
  set(id: number, value: T): this {
    if (!isDense(id)) {
      this.#sparse.set(id, value);
      return this;
    }
    const dense = this.#dense;
    // Filled up to the id, never with holes: a holey array is far slower to read.
    while (dense.length <= id) dense.push(undefined);
    if (dense[id] === undefined) this.#denseSize++;
    dense[id] = value;
    return this;
  }

  /**
   * Removes an id; true when it had a value.
   * @example nodes.delete(3);
   */
  delete(id: number): boolean {
    if (!isDense(id)) return this.#sparse.delete(id);
    if (this.#dense[id] === undefined) return false;
    this.#dense[id] = undefined;
    this.#denseSize--;
    return true;
  }

  /**
   * Every id and value: small ids ascending, then the others in insertion order.
   * @example for (const [id, account] of accounts.entries()) ...
   */
  *entries(): IterableIterator<[number, T]> {
    const dense = this.#dense;
    for (let id = 0; id < dense.length; id++) {
      const value = dense[id];
      if (value !== undefined) yield [id, value];
    }
    yield* this.#sparse.entries();
  }

  /**
   * Every value, in the order of entries().
   * @example [...nodes.values()].map((n) => n.id)
   */
  *values(): IterableIterator<T> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): IterableIterator<[number, T]> {
    return this.entries();
  }
}
