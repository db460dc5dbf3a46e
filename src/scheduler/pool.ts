/**
 * A set of schedulable instances that answers the three questions the policies ask in O(1) or
 * O(log n): the least-loaded member, the k least-loaded in order, and the member at a position
 * (for round robin and random sampling). Members are kept in an indexed min-heap keyed by
 * (load, id) (core/heap.ts) and in a dense array; both record each member's position, so add,
 * delete and a load change never search.
 */
import { IndexedHeap } from '../core/heap.ts';

/** What a pool orders by. `load` is a utilisation in [0, 1); ties go to the lower id. */
export interface PoolMember {
  readonly id: number;
  readonly load: number;
}

interface Entry<T> {
  readonly member: T;
  heapIndex: number;
  listIndex: number;
}

export class Pool<T extends PoolMember> {
  readonly #entries = new Map<T, Entry<T>>();
  readonly #heap = new IndexedHeap<Entry<T>>((a, b) => lessLoaded(a.member, b.member));
  readonly #list: Entry<T>[] = [];
  /** Members' loads moved without reorder() since the last reorderAll(). */
  #unordered = false;
  /** Round-robin position; kept here so every pool (the prefill pool, each P's decode pool) has its own. */
  cursor = 0;

  get size(): number {
    return this.#list.length;
  }

  /**
   * Whether a member is in the pool.
   * @example if (!pool.has(node)) pool.add(node);
   */
  has(member: T): boolean {
    return this.#entries.has(member);
  }

  /**
   * Adds a member; a no-op when it is already there.
   * @example pool.add(node);
   */
  add(member: T): void {
    if (this.#entries.has(member)) return;
    const entry: Entry<T> = { member, heapIndex: -1, listIndex: this.#list.length };
    this.#entries.set(member, entry);
    this.#list.push(entry);
    this.#heap.push(entry);
  }

  /**
   * Removes a member; a no-op when it is absent.
   * @example pool.delete(node);
   */
  delete(member: T): void {
    const entry = this.#entries.get(member);
    if (entry === undefined) return;
    this.#entries.delete(member);
    // Dense array: the last member fills the hole, so positions stay 0..size-1.
    const lastListed = this.#list.pop() as Entry<T>;
    if (lastListed !== entry) {
      this.#list[entry.listIndex] = lastListed;
      lastListed.listIndex = entry.listIndex;
    }
    this.#heap.remove(entry);
  }

  /**
   * Restores the order after a member's load changed; a no-op for a non-member.
   * @example node.load = 0.5; pool.reorder(node);
   */
  reorder(member: T): void {
    const entry = this.#entries.get(member);
    if (entry !== undefined) this.#heap.reorder(entry);
  }

  /**
   * Restores the order after the loads of many members changed without reorder(), in one O(n) pass.
   * @example for (const n of nodes) n.load = next(n); pool.reorderAll();
   */
  reorderAll(): void {
    this.#unordered = false;
    this.#heap.reorderAll();
  }

  /**
   * Notes that members' loads moved without reorder(): the order is restored in one O(n) pass,
   * by reorderAll() or else by the next read of the order (min, ascending), so a pool nobody reads
   * before its next batch costs nothing. True the first time since the order was last restored.
   * @example for (const n of nodes) n.load = next(n); pool.markUnordered();
   */
  markUnordered(): boolean {
    if (this.#unordered) return false;
    this.#unordered = true;
    return true;
  }

  /**
   * The member at a dense position in [0, size); the order is arbitrary but stable between changes.
   * @example pool.at(Math.floor(rng() * pool.size))
   */
  at(index: number): T | undefined {
    return this.#list[index]?.member;
  }

  /**
   * The least-loaded member.
   * @example pool.min()?.id
   */
  min(): T | undefined {
    if (this.#unordered) this.reorderAll();
    return this.#heap.peek()?.member;
  }

  /**
   * Members in ascending (load, id) order, produced lazily: taking the first k costs O(k log k),
   * independent of the pool size. The pool must not change while the iteration runs.
   * @example for (const node of pool.ascending()) if (fits(node)) return node;
   */
  *ascending(): Generator<T, void, undefined> {
    if (this.#unordered) this.reorderAll();
    const heap = this.#heap;
    const root = heap.peek();
    if (root === undefined) return;
    yield root.member;
    // The k smallest of a heap: a frontier of heap positions, itself a small heap ordered by the
    // same key, seeded with the root's children.
    const frontier: number[] = [];
    const push = (index: number): void => {
      if (index >= heap.size) return;
      frontier.push(index);
      let i = frontier.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.#lessAt(frontier[i] as number, frontier[parent] as number)) break;
        swap(frontier, i, parent);
        i = parent;
      }
    };
    push(1);
    push(2);
    while (frontier.length > 0) {
      const top = frontier[0] as number;
      const last = frontier.pop() as number;
      if (frontier.length > 0) {
        frontier[0] = last;
        let i = 0;
        for (;;) {
          const left = 2 * i + 1;
          if (left >= frontier.length) break;
          const right = left + 1;
          const child = right < frontier.length && this.#lessAt(frontier[right] as number, frontier[left] as number) ? right : left;
          if (!this.#lessAt(frontier[child] as number, frontier[i] as number)) break;
          swap(frontier, i, child);
          i = child;
        }
      }
      yield (heap.items[top] as Entry<T>).member;
      push(2 * top + 1);
      push(2 * top + 2);
    }
  }

  /**
   * Every member, in no particular order.
   * @example [...pool.members()].map((n) => n.id)
   */
  *members(): Generator<T, void, undefined> {
    for (const entry of this.#list) yield entry.member;
  }

  #lessAt(a: number, b: number): boolean {
    const items = this.#heap.items;
    return lessLoaded((items[a] as Entry<T>).member, (items[b] as Entry<T>).member);
  }
}

/**
 * The scheduler's one ordering: lower load first, then lower id, so equal loads pick deterministically.
 * @example lessLoaded({ id: 1, load: 0.2 }, { id: 0, load: 0.3 }) // true
 */
export function lessLoaded(a: PoolMember, b: PoolMember): boolean {
  return a.load < b.load || (a.load === b.load && a.id < b.id);
}

function swap(array: number[], a: number, b: number): void {
  const x = array[a] as number;
  array[a] = array[b] as number;
  array[b] = x;
}
