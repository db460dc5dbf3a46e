/**
 * Coalesces link/unlink requests of concurrent callers into runtime calls of at most `maxBatch`
 * clusters: items with the same key (endpoint, operation, timeout, force) that arrive within
 * `windowMs` share a call; a full batch leaves at once.
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
  /** 0 = coalesce only what arrives in the same turn of the event loop. */
  readonly windowMs: number;
  readonly run: (key: BatchKey, clusters: readonly ClusterTarget[]) => Promise<BatchOutcome>;
}

interface Pending {
  readonly target: ClusterTarget;
  readonly resolve: (outcome: ItemOutcome) => void;
}

interface Queue {
  readonly key: BatchKey;
  items: Pending[];
  timer: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | undefined;
}

export class Batcher {
  readonly #options: BatcherOptions;
  readonly #queues = new Map<string, Queue>();

  constructor(options: BatcherOptions) {
    this.#options = options;
  }

  /**
   * Queues one cluster; resolves with its code once its batch has run.
   * @example const { code } = await batcher.push({ endpoint: '0', op: 'link', timeoutMs: 3000, force: false }, target);
   */
  push(key: BatchKey, target: ClusterTarget): Promise<ItemOutcome> {
    const id = `${key.endpoint}\u0000${key.op}\u0000${key.timeoutMs}\u0000${key.force ? 1 : 0}`;
    let queue = this.#queues.get(id);
    if (queue === undefined) {
      queue = { key, items: [], timer: undefined };
      this.#queues.set(id, queue);
    }
    const promise = new Promise<ItemOutcome>((resolve) => queue.items.push({ target, resolve }));
    if (queue.items.length >= this.#options.maxBatch) this.#flush(id, queue);
    else if (queue.timer === undefined) queue.timer = this.#schedule(() => this.#flush(id, queue));
    return promise;
  }

  /** Number of items waiting for their window to close. */
  get pending(): number {
    let n = 0;
    for (const q of this.#queues.values()) n += q.items.length;
    return n;
  }

  #schedule(fn: () => void): Queue['timer'] {
    return this.#options.windowMs > 0 ? setTimeout(fn, this.#options.windowMs) : setImmediate(fn);
  }

  #flush(id: string, queue: Queue): void {
    if (queue.timer !== undefined) {
      clearTimeout(queue.timer as ReturnType<typeof setTimeout>);
      clearImmediate(queue.timer as ReturnType<typeof setImmediate>);
      queue.timer = undefined;
    }
    while (queue.items.length > 0) {
      const batch = queue.items.splice(0, this.#options.maxBatch);
      void this.#runBatch(queue.key, batch);
    }
    this.#queues.delete(id);
  }

  async #runBatch(key: BatchKey, batch: Pending[]): Promise<void> {
    let outcome: BatchOutcome;
    try {
      outcome = await this.#options.run(
        key,
        batch.map((p) => p.target),
      );
    } catch (cause) {
      // Executors must not throw; if one does, its items fail rather than hang.
      outcome = { rets: [], indeterminate: true, message: `executor failed: ${(cause as Error)?.message ?? String(cause)}` };
    }
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
