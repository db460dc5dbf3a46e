/**
 * The waiting requests of one priority class, shared between tenants by weighted fair queuing, so
 * that one tenant's flood cannot starve another's trickle: each tenant has its own first-in
 * first-out line, and the next request served is the head of the tenant whose virtual finish time
 * is the smallest (self-clocked fair queuing: serving a request costs its tenant 1 / weight of
 * virtual time, and a tenant that starts waiting joins at the class's current virtual time, so
 * idle time earns no credit). While several tenants wait, each is served in proportion to its weight.
 *
 * A request that leaves before its turn (its client left, its wait ran out, it was shed) is taken
 * out by `remove`, which only marks it: it is dropped when it reaches the head or the tail of its
 * line, and the counts never include it.
 */
import { IndexedHeap } from '../core/heap.ts';

/** What the queue needs of an item: whether it still waits (cleared by `remove`). */
export interface FairItem {
  waiting: boolean;
}

class Flow<T extends FairItem> {
  readonly items: T[] = [];
  head = 0;
  /** Items still waiting in `items`. */
  count = 0;
  /** Virtual finish time of the next item served from this line. */
  tag = 0;
  /** Virtual finish time of the last item served. */
  finish = 0;
  /** Order of joining the heap, to break ties between equal tags. */
  joined = 0;
  heapIndex = -1;

  constructor(
    readonly tenant: string,
    public weight: number,
  ) {}

  /** Drops items no longer waiting from the front. */
  trimHead(): void {
    while (this.head < this.items.length && !this.items[this.head]!.waiting) this.head++;
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    } else if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
  }

  trimTail(): void {
    while (this.items.length > this.head && !this.items[this.items.length - 1]!.waiting) this.items.pop();
  }
}

export class FairQueue<T extends FairItem> {
  readonly #flows = new Map<string, Flow<T>>();
  readonly #ready = new IndexedHeap<Flow<T>>((a, b) => a.tag < b.tag || (a.tag === b.tag && a.joined < b.joined));
  #virtual = 0;
  #joins = 0;
  #size = 0;

  /** Items waiting, over every tenant. */
  get size(): number {
    return this.#size;
  }

  /**
   * Adds `item` at the end of `tenant`'s line; `weight` is the tenant's share.
   * @example queue.push('tenant-a', 1, ticket);
   */
  push(tenant: string, weight: number, item: T): void {
    let flow = this.#flows.get(tenant);
    if (flow === undefined) {
      flow = new Flow<T>(tenant, weight);
      this.#flows.set(tenant, flow);
    }
    flow.weight = weight;
    item.waiting = true;
    flow.items.push(item);
    flow.count++;
    this.#size++;
    if (flow.count === 1) {
      // A line that starts waiting joins at the class's virtual time: idle time earns no credit.
      flow.tag = Math.max(flow.finish, this.#virtual) + 1 / flow.weight;
      flow.joined = this.#joins++;
      this.#ready.push(flow);
    }
  }

  /**
   * The item that would be served next, without taking it.
   * @example const next = queue.peek();
   */
  peek(): T | undefined {
    const flow = this.#ready.peek();
    if (flow === undefined) return undefined;
    flow.trimHead();
    return flow.items[flow.head];
  }

  /**
   * Takes the item served next.
   * @example const ticket = queue.pop();
   */
  pop(): T | undefined {
    const flow = this.#ready.peek();
    if (flow === undefined) return undefined;
    flow.trimHead();
    const item = flow.items[flow.head]!;
    flow.head++;
    item.waiting = false;
    flow.count--;
    this.#size--;
    this.#virtual = flow.tag;
    flow.finish = flow.tag;
    if (flow.count === 0) {
      this.#ready.remove(flow);
      this.#forget(flow);
    } else {
      flow.tag = flow.finish + 1 / flow.weight;
      this.#ready.reorder(flow);
    }
    return item;
  }

  /**
   * Takes `item` out of `tenant`'s line wherever it is; false when it was not waiting there.
   * @example if (queue.remove(ticket.tenant, ticket)) freeBody(ticket);
   */
  remove(tenant: string, item: T): boolean {
    const flow = this.#flows.get(tenant);
    if (flow === undefined || !item.waiting) return false;
    item.waiting = false;
    flow.count--;
    this.#size--;
    if (flow.count === 0) {
      this.#ready.remove(flow);
      this.#forget(flow);
    } else {
      flow.trimHead();
      flow.trimTail();
    }
    return true;
  }

  /**
   * The newest item of the tenant with the most items waiting: whom shedding costs least in fairness.
   * @example const victim = queue.newestOfLongest();
   */
  newestOfLongest(): T | undefined {
    let longest: Flow<T> | undefined;
    for (const flow of this.#ready.items) if (longest === undefined || flow.count > longest.count) longest = flow;
    if (longest === undefined) return undefined;
    longest.trimTail();
    return longest.items[longest.items.length - 1];
  }

  /**
   * Items waiting per tenant, for metrics and the dashboard.
   * @example for (const [tenant, n] of queue.tenants()) ...
   */
  *tenants(): IterableIterator<readonly [string, number]> {
    for (const flow of this.#ready.items) yield [flow.tenant, flow.count];
  }

  /**
   * An empty line is forgotten: its finish time is never ahead of the class's virtual time (that
   * only grows, to the smallest tag waiting), so coming back later it would join at the class's time anyway.
   */
  #forget(flow: Flow<T>): void {
    this.#flows.delete(flow.tenant);
  }
}
