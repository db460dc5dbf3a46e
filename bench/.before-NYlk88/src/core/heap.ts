/**
 * An indexed binary min-heap: each item remembers its own position, so removing an item or
 * restoring the order after its key changed is O(log n) and never searches or leaves stale entries
 * behind (a plain heap with lazy deletion would hold every completed lease until its old deadline
 * passed). The ledger orders lease deadlines with it, the scheduler's pools order instance loads.
 */

/** What the heap needs from an item: a slot for its position (-1 when absent). */
export interface Indexed {
  heapIndex: number;
}

/** What the deadline heap needs from an item: its deadline and a slot for its position. */
export interface HeapItem extends Indexed {
  deadline: number;
}

export class IndexedHeap<T extends Indexed> {
  readonly #items: T[] = [];
  readonly #less: (a: T, b: T) => boolean;

  /**
   * An empty heap ordered by `less` (strict: true when `a` must come out before `b`).
   * @example const heap = new IndexedHeap<Entry>((a, b) => a.load < b.load);
   */
  constructor(less: (a: T, b: T) => boolean) {
    this.#less = less;
  }

  get size(): number {
    return this.#items.length;
  }

  /**
   * The first item, if any.
   * @example heap.peek()?.deadline
   */
  peek(): T | undefined {
    return this.#items[0];
  }

  /**
   * The heap's positions as they are (0 first; the children of i at 2i+1 and 2i+2), read-only and
   * live, for walks that read the heap in order without taking from it.
   * @example heap.items[1]
   */
  get items(): readonly T[] {
    return this.#items;
  }

  /**
   * Whether the item is in this heap.
   * @example if (!heap.has(record)) heap.push(record);
   */
  has(item: T): boolean {
    return item.heapIndex >= 0 && this.#items[item.heapIndex] === item;
  }

  /**
   * Adds an item that is not in the heap yet.
   * @example heap.push(record);
   */
  push(item: T): void {
    item.heapIndex = this.#items.length;
    this.#items.push(item);
    this.#up(item.heapIndex);
  }

  /**
   * Removes an item if present; a no-op otherwise.
   * @example heap.remove(record);
   */
  remove(item: T): void {
    const index = item.heapIndex;
    if (index < 0 || this.#items[index] !== item) return;
    const last = this.#items.pop() as T;
    item.heapIndex = -1;
    if (last === item) return;
    this.#items[index] = last;
    last.heapIndex = index;
    this.#restore(index);
  }

  /**
   * Restores the order after an item's key changed; a no-op for an item not in the heap.
   * @example node.load = 0.5; heap.reorder(entry);
   */
  reorder(item: T): void {
    if (this.has(item)) this.#restore(item.heapIndex);
  }

  #restore(index: number): void {
    if (index > 0 && this.#lessAt(index, (index - 1) >> 1)) this.#up(index);
    else this.#down(index);
  }

  #up(index: number): void {
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#lessAt(i, parent)) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(index: number): void {
    const n = this.#items.length;
    let i = index;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.#lessAt(right, left) ? right : left;
      if (!this.#lessAt(child, i)) break;
      this.#swap(i, child);
      i = child;
    }
  }

  #lessAt(a: number, b: number): boolean {
    return this.#less(this.#items[a] as T, this.#items[b] as T);
  }

  #swap(a: number, b: number): void {
    const items = this.#items;
    const x = items[a] as T;
    const y = items[b] as T;
    items[a] = y;
    items[b] = x;
    x.heapIndex = b;
    y.heapIndex = a;
  }
}

/** Earlier deadline first. */
function earlier(a: HeapItem, b: HeapItem): boolean {
  return a.deadline < b.deadline;
}

/** The indexed heap ordered by deadline, with the one call a lease schedule needs besides: move a deadline. */
export class DeadlineHeap<T extends HeapItem> extends IndexedHeap<T> {
  constructor() {
    super(earlier);
  }

  /**
   * Changes an item's deadline and restores the heap order (adding the item if absent).
   * @example heap.update(record, now + 30_000);
   */
  update(item: T, deadline: number): void {
    item.deadline = deadline;
    if (this.has(item)) this.reorder(item);
    else this.push(item);
  }
}
