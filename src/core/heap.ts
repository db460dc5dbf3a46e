/**
 * An indexed binary min-heap of lease deadlines. Each item remembers its own position, so removing
 * a finished record or moving its deadline is O(log n) and leaves no stale entries behind (a plain
 * heap with lazy deletion would hold every completed lease until its old deadline passed).
 */

/** What the heap needs from an item: its deadline and a slot for its position (-1 when absent). */
export interface HeapItem {
  deadline: number;
  heapIndex: number;
}

export class DeadlineHeap<T extends HeapItem> {
  readonly #items: T[] = [];

  get size(): number {
    return this.#items.length;
  }

  /**
   * The item with the earliest deadline, if any.
   * @example heap.peek()?.deadline
   */
  peek(): T | undefined {
    return this.#items[0];
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
   * Changes an item's deadline and restores the heap order.
   * @example heap.update(record, now + 30_000);
   */
  update(item: T, deadline: number): void {
    item.deadline = deadline;
    if (item.heapIndex >= 0 && this.#items[item.heapIndex] === item) this.#restore(item.heapIndex);
    else this.push(item);
  }

  #restore(index: number): void {
    if (index > 0 && this.#less(index, (index - 1) >> 1)) this.#up(index);
    else this.#down(index);
  }

  #up(index: number): void {
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) break;
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
      const child = right < n && this.#less(right, left) ? right : left;
      if (!this.#less(child, i)) break;
      this.#swap(i, child);
      i = child;
    }
  }

  #less(a: number, b: number): boolean {
    return (this.#items[a] as T).deadline < (this.#items[b] as T).deadline;
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
