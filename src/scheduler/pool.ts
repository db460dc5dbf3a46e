/**
 * A set of schedulable instances that answers the three questions the policies ask: the
 * least-loaded member, the k least-loaded in order, and the member at a position (for round robin
 * and random sampling). Members sit in a dense array whose positions add and delete keep (the last
 * member fills a hole). A small pool (at most SMALL_POOL_MAX members: each prefill instance's
 * decode instances of its group) is that array alone, searched when read. A larger one (the pool
 * of every prefill instance) also keeps an indexed min-heap keyed by (load, id) (core/heap.ts)
 * and a map from member to entry, so add, delete and a load change are O(log n) and never search.
 * The heap's map, entries and comparator were most of the objects a large cluster's scheduler held:
 * a cost to every full collection of the heap, and to every refresh that moved loads.
 */
import { IndexedHeap } from '../core/heap.ts';

/** What a pool orders by. `load` is a utilisation in [0, 1); ties go to the lower id. */
export interface PoolMember {
  readonly id: number;
  readonly load: number;
}

/** Up to this many members a pool is a plain array; one more and it builds its heap. */
export const SMALL_POOL_MAX = 16;

interface Entry<T> {
  readonly member: T;
  heapIndex: number;
  listIndex: number;
}

/** A large pool: member → entry, the heap of entries, and the entries dense (the positions the small array had). */
class Ordered<T extends PoolMember> {
  readonly entries = new Map<T, Entry<T>>();
  readonly heap = new IndexedHeap<Entry<T>>((a, b) => lessLoaded(a.member, b.member));
  readonly list: Entry<T>[] = [];

  constructor(members: readonly T[]) {
    for (const member of members) this.add(member);
  }

  add(member: T): void {
    const entry: Entry<T> = { member, heapIndex: -1, listIndex: this.list.length };
    this.entries.set(member, entry);
    this.list.push(entry);
    this.heap.push(entry);
  }
}

export class Pool<T extends PoolMember> {
  /** Small: the members, dense. Undefined once the pool has grown past SMALL_POOL_MAX (it then stays large). */
  #small: T[] | undefined = [];
  /** Large: set when the pool grows past SMALL_POOL_MAX. */
  #ordered: Ordered<T> | undefined;
  /** Members' loads moved without reorder() since the last reorderAll(). */
  #unordered = false;
  /** Round-robin position; kept here so every pool (the prefill pool, each P's decode pool) has its own. */
  cursor = 0;

  get size(): number {
    return this.#small === undefined ? this.#ordered!.list.length : this.#small.length;
  }

  /**
   * Whether a member is in the pool.
   * @example if (!pool.has(node)) pool.add(node);
   */
  has(member: T): boolean {
    return this.#small === undefined ? this.#ordered!.entries.has(member) : this.#small.includes(member);
  }

  /**
   * Adds a member; a no-op when it is already there.
   * @example pool.add(node);
   */
  add(member: T): void {
    const small = this.#small;
    if (small !== undefined) {
      if (small.includes(member)) return;
      if (small.length < SMALL_POOL_MAX) {
        small.push(member);
        return;
      }
      // Growing past the small size: the heap is built over the members in their positions.
      this.#ordered = new Ordered(small);
      this.#small = undefined;
    }
    const ordered = this.#ordered!;
    if (!ordered.entries.has(member)) ordered.add(member);
  }

  /**
   * Removes a member; a no-op when it is absent.
   * @example pool.delete(node);
   */
  delete(member: T): void {
    const small = this.#small;
    if (small !== undefined) {
      const at = small.indexOf(member);
      if (at < 0) return;
      // Dense array: the last member fills the hole, so positions stay 0..size-1.
      const last = small.pop()!;
      if (last !== member) small[at] = last;
      return;
    }
    const ordered = this.#ordered!;
    const entry = ordered.entries.get(member);
    if (entry === undefined) return;
    ordered.entries.delete(member);
    const lastListed = ordered.list.pop() as Entry<T>;
    if (lastListed !== entry) {
      ordered.list[entry.listIndex] = lastListed;
      lastListed.listIndex = entry.listIndex;
    }
    ordered.heap.remove(entry);
  }

  /**
   * Restores the order after a member's load changed; a no-op for a non-member (and for a small
   * pool, which orders its members when read).
   * @example node.load = 0.5; pool.reorder(node);
   */
  reorder(member: T): void {
    const ordered = this.#ordered;
    if (ordered === undefined) return;
    const entry = ordered.entries.get(member);
    if (entry !== undefined) ordered.heap.reorder(entry);
  }

  /**
   * Restores the order after the loads of many members changed without reorder(), in one O(n) pass.
   * @example for (const n of nodes) n.load = next(n); pool.reorderAll();
   */
  reorderAll(): void {
    this.#unordered = false;
    this.#ordered?.heap.reorderAll();
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
    const small = this.#small;
    return small === undefined ? this.#ordered!.list[index]?.member : small[index];
  }

  /**
   * The least-loaded member.
   * @example pool.min()?.id
   */
  min(): T | undefined {
    if (this.#unordered) this.reorderAll();
    const small = this.#small;
    if (small === undefined) return this.#ordered!.heap.peek()?.member;
    let least = small[0];
    for (let i = 1; i < small.length; i++) if (lessLoaded(small[i]!, least!)) least = small[i];
    return least;
  }

  /**
   * Members in ascending (load, id) order, produced lazily: taking the first k of a large pool
   * costs O(k log k), independent of its size; a small pool yields its least member after one scan
   * and sorts the rest only if asked for more. The pool must not change while the iteration runs.
   * @example for (const node of pool.ascending()) if (fits(node)) return node;
   */
  *ascending(): Generator<T, void, undefined> {
    if (this.#unordered) this.reorderAll();
    const small = this.#small;
    if (small !== undefined) {
      const least = this.min();
      if (least === undefined) return;
      yield least;
      const rest = small.filter((m) => m !== least).sort(byLoad);
      for (const member of rest) yield member;
      return;
    }
    const heap = this.#ordered!.heap;
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
    const small = this.#small;
    if (small !== undefined) {
      for (const member of small) yield member;
      return;
    }
    for (const entry of this.#ordered!.list) yield entry.member;
  }

  #lessAt(a: number, b: number): boolean {
    const items = this.#ordered!.heap.items;
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

/** lessLoaded as a sort comparator (members are distinct, so never 0 for two of them). */
function byLoad(a: PoolMember, b: PoolMember): number {
  return lessLoaded(a, b) ? -1 : lessLoaded(b, a) ? 1 : 0;
}

function swap(array: number[], a: number, b: number): void {
  const x = array[a] as number;
  array[a] = array[b] as number;
  array[b] = x;
}
