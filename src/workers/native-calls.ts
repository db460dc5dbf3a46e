/**
 * Link and unlink tasks made by the runtime's own threads (its call queue, src/ffi/calls.ts)
 * instead of worker threads: the task is written into a slot of shared memory, a runtime thread
 * makes the call and the answer comes back through a thread-safe callback on this thread's event
 * loop. No worker thread wakes, so a lone call pays one native thread's wake-up instead of a worker
 * thread's (bench/links-floor.bench.ts measures both).
 *
 * The answer is the link task's answer (tasks.ts `linkOrUnlink`), code for code: the same deadline
 * rule, whole-call refusals given to every cluster, the shared encoding's codes written into its
 * buffer, and for LLM_ALREADY_LINK which links this runtime holds, read by the runtime thread right
 * after the call. A native call cannot be killed: a task aborted (or a pool closed) while its call
 * runs fails at once as indeterminate, and its slot is reused once the call has ended.
 */
import { LLM_STATUS, LlmStatusError, normalizeStatus } from '../core/llm-status.ts';
import { CallQueue, type ClusterSpec } from '../ffi/index.ts';
import type { LinkSide } from '../links/types.ts';
import { abortedReply, closedReply, type DirectRunOptions } from './direct-threads.ts';
import { decodeClusters, sharedRecords, sharedRets } from './encoding.ts';
import type { LinkReply, LinkTask, TaskReply, WorkerCluster } from './protocol.ts';

interface Job {
  readonly task: LinkTask;
  readonly resolve: (reply: TaskReply<LinkReply>) => void;
  readonly signal: AbortSignal | undefined;
  /** Set once the caller has its answer (aborted or closed) before the call ended. */
  answered: boolean;
  /** Clusters of the batch, known once it is written into its slot. */
  count: number;
}

export class NativeLinkCalls {
  readonly #queue: CallQueue;
  readonly #free: number[] = [];
  readonly #running = new Map<number, Job>();
  readonly #waiting: Job[] = [];
  #closed = false;
  #drained: (() => void) | undefined;

  /**
   * Link calls on `threads` runtime threads, or undefined when the runtime has no call queue.
   * @example const calls = NativeLinkCalls.open(2) ?? fallBackToWorkerThreads();
   */
  static open(threads: number): NativeLinkCalls | undefined {
    let calls: NativeLinkCalls | undefined;
    // One slot per thread: a call is handed over only when a thread is free for it, so a task that
    // waits (here, in order) can still be aborted or closed before it runs, as on worker threads.
    const queue = CallQueue.open(threads, threads, (slot) => calls!.#ended(slot));
    if (queue === undefined) return undefined;
    calls = new NativeLinkCalls(queue);
    return calls;
  }

  private constructor(queue: CallQueue) {
    this.#queue = queue;
    for (let slot = queue.slots - 1; slot >= 0; slot--) this.#free.push(slot);
  }

  /** Tasks not yet taken by a runtime thread. */
  get queued(): number {
    return this.#waiting.length;
  }

  /**
   * Runs a link or unlink task; resolves with the reply a link worker would give.
   * @example const reply = await calls.run({ op: 'link', handle, timeoutMs: 3000, deadline: Date.now() + 3000, force: false, batch });
   */
  run<T>(task: LinkTask, options: DirectRunOptions = {}): Promise<TaskReply<T>> {
    if (this.#closed) return Promise.resolve(closedReply());
    const signal = options.signal;
    if (signal?.aborted === true) return Promise.resolve(abortedReply(signal));
    return new Promise<TaskReply<T>>((resolve) => {
      const job: Job = { task, resolve: resolve as Job['resolve'], signal, answered: false, count: 0 };
      signal?.addEventListener('abort', () => this.#abort(job), { once: true });
      const slot = this.#free.pop();
      if (slot === undefined) this.#waiting.push(job);
      else this.#start(slot, job);
    });
  }

  /** Fails queued tasks, answers running ones as closed, and stops the threads once their calls end. Idempotent. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      for (const job of this.#waiting.splice(0)) job.resolve(closedReply());
      for (const job of this.#running.values()) this.#answer(job, closedReply());
    }
    if (this.#running.size > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    // Not from within the last answer's callback: its runtime thread may still be in it (see #dropHold).
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    this.#queue.destroy();
  }

  #start(slot: number, job: Job): void {
    const { task } = job;
    const batch = task.batch;
    try {
      let clusters: readonly ClusterSpec[] | Uint8Array;
      if (batch.enc === 'shared') {
        clusters = sharedRecords(batch.buffer, batch.n);
        job.count = batch.n;
      } else {
        const decoded = decodeClusters(batch);
        clusters = decoded.map(toSpec);
        job.count = decoded.length;
      }
      const { op, handle, timeoutMs, deadline, force } = task;
      this.#queue.fill(slot, { op, handle, clusters, n: job.count, timeoutMs, deadline, force });
    } catch (cause) {
      this.#release(slot);
      // A batch the runtime would refuse as a whole gets that code for every cluster, as from a worker.
      if (cause instanceof LlmStatusError) {
        const code = normalizeStatus(cause.code);
        job.resolve({ ok: true, value: this.#reply(task, code, new Array<number>(job.count).fill(code)) });
      } else {
        const message = `worker failed: ${cause instanceof Error ? cause.message : String(cause)}`;
        job.resolve({ ok: false, code: LLM_STATUS.LLM_FAILED, message });
      }
      return;
    }
    const rc = this.#queue.submit(slot);
    if (rc !== LLM_STATUS.LLM_SUCCESS) {
      this.#release(slot);
      job.resolve({ ok: false, code: LLM_STATUS.LLM_FAILED, message: `the runtime's call queue refused the call (status ${rc})` });
      return;
    }
    if (this.#running.size === 0) this.#queue.ref();
    this.#running.set(slot, job);
  }

  /** The callback of a runtime thread: the call in `slot` has ended. */
  #ended(slot: number): void {
    const job = this.#running.get(slot);
    if (job === undefined) return;
    this.#running.delete(slot);
    if (this.#running.size === 0) {
      if (this.#queue.holdsCaller) setTimeout(this.#dropHold, 0);
      else this.#queue.unref();
    }
    if (!job.answered) {
      job.answered = true;
      job.resolve({ ok: true, value: this.#outcome(slot, job) });
    }
    this.#release(slot);
    if (this.#running.size === 0) this.#drained?.();
  }

  /**
   * Drops the process hold taken when the first call went out, one turn after the last call's
   * answer where the callback holds its caller (Deno): the runtime thread stays in the callback
   * until the callback's native frame has returned, so a process that ended, or a queue destroyed,
   * within that callback would leave the thread in it (a crash at exit, a join that never returns).
   */
  readonly #dropHold = (): void => this.#queue.unref();

  #outcome(slot: number, { task, count }: Job): LinkReply {
    const rc = normalizeStatus(this.#queue.ret(slot));
    // A call refused as a whole leaves rets untouched: every cluster gets the call's code.
    const whole = rc !== LLM_STATUS.LLM_SUCCESS && rc !== LLM_STATUS.LLM_FAILED;
    const rets: number[] = [];
    for (let i = 0; i < count; i++) rets.push(whole ? rc : normalizeStatus(this.#queue.code(slot, i)));
    const reply = this.#reply(task, rc, rets);
    if (task.op !== 'link' || !rets.includes(LLM_STATUS.LLM_ALREADY_LINK)) return reply;
    if (!this.#queue.holdersKnown(slot)) return reply; // unknown: the refusal stands as a failure
    const holders = rets.map((r, i): LinkSide | undefined =>
      r === LLM_STATUS.LLM_ALREADY_LINK ? (this.#queue.holder(slot, i) ?? undefined) : undefined,
    );
    return { ...reply, holders };
  }

  /** The reply of a link worker: with the shared encoding the codes go into its buffer. */
  #reply(task: LinkTask, rc: number, rets: number[]): LinkReply {
    if (task.batch.enc !== 'shared') return { rc, rets };
    sharedRets(task.batch.buffer, task.batch.n).set(rets);
    return { rc, rets: [] };
  }

  #release(slot: number): void {
    for (;;) {
      const next = this.#waiting.shift();
      if (next === undefined) break;
      if (next.answered) continue;
      this.#start(slot, next);
      return;
    }
    this.#free.push(slot);
  }

  #abort(job: Job): void {
    if (job.answered) return;
    const at = this.#waiting.indexOf(job);
    if (at >= 0) this.#waiting.splice(at, 1);
    this.#answer(job, abortedReply(job.signal));
  }

  #answer(job: Job, reply: TaskReply<LinkReply>): void {
    if (job.answered) return;
    job.answered = true;
    job.resolve(reply);
  }
}

function toSpec(c: WorkerCluster): ClusterSpec {
  return { remoteClusterId: c.id, remoteIp: c.ip, remotePort: c.port, localIp: c.localIp, localPort: c.localPort };
}
