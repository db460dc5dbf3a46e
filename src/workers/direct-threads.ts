/**
 * Worker threads that take a task by one postMessage and answer by one: the path of link and
 * unlink calls, where the hop is most of what the pool adds to a lone call. A piscina round trip
 * costs about 21 µs on the 2-core machine of bench/results/links-floor.md, a bare message each
 * way about 9 µs; these threads keep the pool's contract (one task per thread, FIFO queue, a dead
 * or aborted task fails with a code and a message, the thread is replaced) without the rest.
 *
 * Why messages and not shared memory: on Bun a hot round trip by message costs ≈ 11 µs, and none
 * of the alternatives measured against it in one run beat it: a request in a SharedArrayBuffer
 * with the thread blocked in Atomics.wait, answered by message, ≈ 12–13 µs; answered in the buffer
 * with the main thread woken by Atomics.waitAsync ≈ 16 µs; the thread spinning before it blocks
 * ≈ 17.5 µs (it takes a core the main thread needs on 2 cores). A message posted just before the
 * Atomics.notify that wakes its receiver is not yet there for receiveMessageOnPort, so a shared
 * doorbell cannot carry structured-clone tasks either. Keeping a thread polling its port for
 * 150 µs after each answer, so the next task finds it awake, did not pay on the loaded 2-core
 * machine: lone pairs 1.42× direct against 1.36×, batches 0.74× against 0.86× (24 alternating
 * rounds). What a call costs beyond the hop is the wait for a sleeping thread to run again, which
 * bench/links-floor.bench.ts measures apart.
 */
import { Worker } from 'node:worker_threads';
import { LLM_STATUS } from '../core/llm-status.ts';
import { MODULE_EXTENSION } from '../platform/module-path.ts';
import { packTask, unpackReply } from './link-wire.ts';
import type { TaskReply } from './protocol.ts';

export interface DirectThreadsOptions {
  readonly threads: number;
  /** Worker module: its default export runs one task (the pool's worker modules). */
  readonly filename: string;
  /** Passed to every worker as `workerData` (plus the module's filename). */
  readonly workerData: Record<string, unknown>;
}

export interface DirectRunOptions {
  readonly signal?: AbortSignal | undefined;
  readonly transfer?: readonly ArrayBuffer[] | undefined;
}

interface Job {
  readonly task: unknown;
  readonly transfer: readonly ArrayBuffer[] | undefined;
  readonly signal: AbortSignal | undefined;
  readonly resolve: (reply: TaskReply<unknown>) => void;
  /** Set when the caller aborted: the thread's exit then reports the abort. */
  aborted: boolean;
}

interface Thread {
  readonly worker: Worker;
  ready: boolean;
  job: Job | undefined;
  /** Set once the thread has been replaced, so its late events change nothing. */
  gone: boolean;
}

const ENTRY = new URL(`./direct-entry${MODULE_EXTENSION}`, import.meta.url);

export class DirectThreads {
  readonly #options: DirectThreadsOptions;
  readonly #threads: Thread[] = [];
  readonly #queue: Job[] = [];
  #closed = false;

  constructor(options: DirectThreadsOptions) {
    this.#options = options;
    for (let i = 0; i < options.threads; i++) this.#threads.push(this.#start());
  }

  /** Tasks queued and not yet started. */
  get queued(): number {
    return this.#queue.length;
  }

  /**
   * Runs a task on the first idle thread (the same warm thread while calls come one at a time).
   * @example const reply = await threads.run({ op: 'link', ... });
   */
  run<T>(task: unknown, options: DirectRunOptions = {}): Promise<TaskReply<T>> {
    if (this.#closed) return Promise.resolve(closedReply());
    return new Promise<TaskReply<T>>((resolve) => {
      const job: Job = {
        task,
        transfer: options.transfer,
        signal: options.signal,
        resolve: resolve as Job['resolve'],
        aborted: false,
      };
      if (job.signal !== undefined) {
        if (job.signal.aborted) return resolve(abortedReply(job.signal));
        job.signal.addEventListener('abort', () => this.#abort(job), { once: true });
      }
      const idle = this.#threads.find((t) => t.ready && t.job === undefined);
      if (idle === undefined) this.#queue.push(job);
      else this.#send(idle, job);
    });
  }

  /**
   * Terminates the thread with this id; its task fails ("worker died") and a new thread takes its place.
   * @example await threads.terminate(threadId);
   */
  async terminate(threadId: number): Promise<boolean> {
    const thread = this.#threads.find((t) => t.worker.threadId === threadId);
    if (thread === undefined) return false;
    await thread.worker.terminate();
    return true;
  }

  /** Terminates every thread; tasks still queued or running fail. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.resolve(closedReply());
    await Promise.all(this.#threads.map((t) => t.worker.terminate()));
  }

  #start(): Thread {
    const worker = new Worker(ENTRY, { workerData: { ...this.#options.workerData, filename: this.#options.filename } });
    const thread: Thread = { worker, ready: false, job: undefined, gone: false };
    // A starting thread keeps the process alive (a task may already wait for it: Deno ends a
    // process whose only pending work is an unref'd worker's); once ready, only a thread with a
    // task does (see #send).
    worker.on('message', (message: unknown) => this.#answered(thread, message));
    worker.on('error', (err: Error) => this.#died(thread, `worker died: ${err.message}`));
    worker.on('exit', (code: number) => this.#died(thread, `worker died: worker exited with code ${code}`));
    return thread;
  }

  #send(thread: Thread, job: Job): void {
    thread.job = job;
    thread.worker.ref();
    const message = packTask(job.task);
    if (job.transfer !== undefined && job.transfer.length > 0) thread.worker.postMessage(message, [...job.transfer]);
    else thread.worker.postMessage(message);
  }

  #answered(thread: Thread, message: unknown): void {
    if (thread.gone) return;
    if (!thread.ready) {
      // The entry's first message says the module is loaded and listening.
      thread.ready = true;
      thread.worker.unref();
      this.#next(thread);
      return;
    }
    const job = thread.job;
    thread.job = undefined;
    thread.worker.unref();
    this.#next(thread);
    job?.resolve(unpackReply(message));
  }

  #next(thread: Thread): void {
    for (;;) {
      const job = this.#queue.shift();
      if (job === undefined) return;
      if (job.aborted) continue;
      this.#send(thread, job);
      return;
    }
  }

  #died(thread: Thread, message: string): void {
    if (thread.gone) return;
    thread.gone = true;
    const job = thread.job;
    thread.job = undefined;
    const index = this.#threads.indexOf(thread);
    if (this.#closed) {
      job?.resolve(closedReply());
      return;
    }
    const next = this.#start();
    if (index >= 0) this.#threads[index] = next;
    if (job !== undefined) job.resolve(job.aborted ? abortedReply(job.signal) : { ok: false, code: LLM_STATUS.LLM_FAILED, message });
  }

  /** A queued task leaves the queue; a running one takes its thread down (a native call cannot be interrupted otherwise). */
  #abort(job: Job): void {
    if (job.aborted) return;
    job.aborted = true;
    const queuedAt = this.#queue.indexOf(job);
    if (queuedAt >= 0) {
      this.#queue.splice(queuedAt, 1);
      job.resolve(abortedReply(job.signal));
      return;
    }
    const thread = this.#threads.find((t) => t.job === job);
    if (thread !== undefined) void thread.worker.terminate();
  }
}

/** The answer of a task whose pool closed before it ended. */
export function closedReply(): TaskReply<never> {
  return { ok: false, code: LLM_STATUS.LLM_FAILED, message: 'worker pool is closed' };
}

/** The answer of a task aborted by its caller's signal. */
export function abortedReply(signal: AbortSignal | undefined): TaskReply<never> {
  const reason = signal?.reason;
  const message = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
  return { ok: false, code: LLM_STATUS.LLM_FAILED, message: `task aborted: ${message}` };
}
