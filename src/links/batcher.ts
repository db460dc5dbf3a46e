/**
 * Coalesces link/unlink requests of concurrent callers into runtime calls of at most `maxBatch`
 * clusters: items with the same key (endpoint, operation, timeout, force) share a call. While no
 * runtime call is in flight a batch leaves as soon as the code that queued it has run (a microtask:
 * what one synchronous stretch queued, such as callers started by one `Promise.all`, goes
 * together), so a lone call pays neither the window nor a turn of the event loop (a turn is a
 * syscall, 4–35 µs on the loaded 2-core machine of bench/results/links-floor.md, twice per
 * link+unlink pair); while one is in flight, items gather for up to `windowMs` or until the calls
 * out have answered, whichever comes first; a full batch leaves at once. Items that leave together
 * while fewer than `parallelCalls` calls are out are split evenly over the idle ones: on the
 * runtime's threads two calls of 8 made at once beat one call of 16 (bench/results/links-floor.md).
 */
import { LLM_STATUS } from '../core/llm-status.ts';
import type { BatchOutcome, ClusterTarget, LinkSide } from './types.ts';

export interface BatchKey {
  readonly endpoint: string;
  readonly op: 'link' | 'unlink';
  readonly timeoutMs: number;
  readonly force: boolean;
}

/** Code of one item plus whether the call's outcome was unknown. */
export interface ItemOutcome {
  readonly code: number;
  /** Link calls answered LLM_ALREADY_LINK: the side on which the runtime holds the link, if it does. */
  readonly holder: LinkSide | undefined;
  readonly indeterminate: boolean;
  readonly message: string | undefined;
}

export interface BatcherOptions {
  readonly maxBatch: number;
  /** 0 = behind a call in flight, coalesce only what arrives in the same turn of the event loop. */
  readonly windowMs: number;
  /** Calls the executor runs at once (default 1: never split). */
  readonly parallelCalls?: number;
  readonly run: (key: BatchKey, clusters: readonly ClusterTarget[]) => Promise<BatchOutcome>;
}

interface Pending {
  readonly target: ClusterTarget;
  readonly resolve: (outcome: ItemOutcome) => void;
}

interface Queue {
  readonly key: BatchKey;
  items: Pending[];
  timer: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | typeof MICROTASK | undefined;
}

/** The `timer` of a queue that leaves in a microtask (which cannot be cancelled; a stale one finds its queue gone). */
const MICROTASK = 'microtask';

export class Batcher {
  readonly #options: BatcherOptions;
  readonly #queues = new Map<string, Queue>();
  /** Queue ids of key objects seen: a caller that reuses its keys saves spelling the id per item. */
  readonly #ids = new WeakMap<BatchKey, string>();
  /** Runtime calls sent and not yet answered: the window only gathers while there are some. */
  #inFlight = 0;

  constructor(options: BatcherOptions) {
    this.#options = options;
  }

  /**
   * Queues one cluster; resolves with its code once its batch has run.
   * @example const { code } = await batcher.push({ endpoint: '0', op: 'link', timeoutMs: 3000, force: false }, target);
   */
  push(key: BatchKey, target: ClusterTarget): Promise<ItemOutcome> {
    let id = this.#ids.get(key);
    if (id === undefined) {
      id = `${key.endpoint}\u0000${key.op}\u0000${key.timeoutMs}\u0000${key.force ? 1 : 0}`;
      this.#ids.set(key, id);
    }
    let queue = this.#queues.get(id);
    if (queue === undefined) {
      queue = { key, items: [], timer: undefined };
      this.#queues.set(id, queue);
    }
    const promise = new Promise<ItemOutcome>((resolve) => queue.items.push({ target, resolve }));
    if (queue.items.length >= this.#options.maxBatch) this.#flush(id, queue);
    else if (queue.timer === undefined) queue.timer = this.#schedule(id, queue);
    return promise;
  }

  /** Number of items waiting for their window to close. */
  get pending(): number {
    let n = 0;
    for (const q of this.#queues.values()) n += q.items.length;
    return n;
  }

  #schedule(id: string, queue: Queue): Queue['timer'] {
    const fn = () => this.#flush(id, queue);
    // Nothing out: what the running code queued leaves together once it has run. Something out: gather.
    if (this.#inFlight === 0) {
      queueMicrotask(fn);
      return MICROTASK;
    }
    return this.#options.windowMs > 0 ? setTimeout(fn, this.#options.windowMs) : setImmediate(fn);
  }

  /** The last call out has answered: whatever gathered meanwhile need not wait out its window. */
  #drained(): void {
    for (const [id, queue] of this.#queues) this.#flush(id, queue);
  }

  #flush(id: string, queue: Queue): void {
    if (this.#queues.get(id) !== queue) return;
    if (queue.timer !== undefined && queue.timer !== MICROTASK) {
      clearTimeout(queue.timer as ReturnType<typeof setTimeout>);
      clearImmediate(queue.timer as ReturnType<typeof setImmediate>);
    }
    queue.timer = undefined;
    const idle = Math.max(1, (this.#options.parallelCalls ?? 1) - this.#inFlight);
    const size = Math.min(this.#options.maxBatch, Math.ceil(queue.items.length / idle));
    while (queue.items.length > 0) {
      const batch = queue.items.splice(0, size);
      void this.#runBatch(queue.key, batch);
    }
    this.#queues.delete(id);
  }

  async #runBatch(key: BatchKey, batch: Pending[]): Promise<void> {
    let outcome: BatchOutcome;
    this.#inFlight++;
    try {
      outcome = await this.#options.run(
        key,
        batch.map((p) => p.target),
      );
    } catch (cause) {
      // Executors must not throw; if one does, its items fail rather than hang.
      outcome = { rets: [], indeterminate: true, message: `executor failed: ${(cause as Error)?.message ?? String(cause)}` };
    }
    if (--this.#inFlight === 0 && this.#queues.size > 0) this.#drained();
    batch.forEach((p, i) =>
      p.resolve({
        code: outcome.rets[i] ?? LLM_STATUS.LLM_FAILED,
        holder: outcome.holders?.[i],
        indeterminate: outcome.indeterminate === true,
        message: outcome.message,
      }),
    );
  }
}
