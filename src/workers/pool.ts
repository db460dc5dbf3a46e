/**
 * The worker pool: piscina threads that run device-runtime calls so the main thread never blocks.
 * Replies are plain data; a task whose worker dies or that is aborted resolves as a failure with
 * a code and a message, and the pool replaces the thread and goes on. Link and unlink calls, whose
 * latency is the pool's hot path, run apart, started with the first such call so pools that never
 * link do not carry them: on the runtime's own threads through its call queue (native-calls.ts)
 * when the pool runs the FFI link worker and the runtime has that queue, else on direct worker
 * threads (direct-threads.ts).
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { optionErrors } from '../core/errors.ts';
import { LLM_STATUS } from '../core/llm-status.ts';
import { MODULE_EXTENSION } from '../platform/module-path.ts';
import { DirectThreads } from './direct-threads.ts';
import { NativeLinkCalls } from './native-calls.ts';
import type { TaskReply, WorkerTask } from './protocol.ts';
import { BOARD_SLOTS } from './tasks.ts';

/**
 * Threads: 2 on the 2-core machine of bench/results/pool.md, where 2 beat 1 and 4 did no better.
 * Threads mostly wait on the network inside the runtime, so larger machines get up to 4: more
 * batches in flight while some wait out a dead peer's timeout.
 */
export const DEFAULT_POOL_THREADS = Math.max(2, Math.min(4, availableParallelism()));
/** piscina's `sync` atomics beat `async` and `disabled` at the best setting (bench/results/pool.md). */
export const DEFAULT_ATOMICS: PoolAtomics = 'sync';

export type PoolAtomics = 'sync' | 'async' | 'disabled';

type WithoutTaskId<T> = T extends unknown ? Omit<T, 'taskId'> : never;
export type PoolTask = WithoutTaskId<WorkerTask>;

export interface WorkerPoolOptions {
  /** Worker threads (fixed: threads are created up front so the first calls do not wait). */
  readonly threads?: number;
  readonly atomics?: PoolAtomics;
  /**
   * Worker module (default: the FFI-backed link worker): a path or a URL. Typed by its `href` alone,
   * since the worker graph is type-checked on Deno without the DOM's `URL` type.
   */
  readonly filename?: string | { readonly href: string };
  /** Passed to every worker as `workerData.config`. */
  readonly workerConfig?: unknown;
  /**
   * Where link and unlink calls run: `native` (default) on the runtime's threads when the pool runs
   * the default worker module and the runtime has a call queue, else on worker threads; `workers`
   * always on worker threads (which `terminateThreadOf` can kill mid-call).
   */
  readonly linkThreads?: LinkThreads;
}

export type LinkThreads = 'native' | 'workers';

export interface RunOptions {
  readonly signal?: AbortSignal;
  readonly transfer?: readonly ArrayBuffer[];
}

export interface SubmittedTask<T> {
  readonly taskId: number;
  readonly reply: Promise<TaskReply<T>>;
}

export class WorkerPool {
  readonly #piscina: Piscina;
  readonly #board = new Int32Array(new SharedArrayBuffer(BOARD_SLOTS * 4));
  readonly #threads: number;
  readonly #filename: string;
  readonly #workerConfig: unknown;
  readonly #nativeLinks: boolean;
  #direct: DirectThreads | undefined;
  #native: NativeLinkCalls | null | undefined;
  #nextTaskId = 1;
  #closed = false;

  constructor(options: WorkerPoolOptions = {}) {
    const threads = options.threads ?? DEFAULT_POOL_THREADS;
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError('threads must be a positive integer');
    const filename = options.filename ?? new URL(`./link-worker${MODULE_EXTENSION}`, import.meta.url);
    this.#nativeLinks = options.filename === undefined && (options.linkThreads ?? 'native') === 'native';
    this.#threads = threads;
    this.#filename = typeof filename === 'string' ? filename : filename.href;
    this.#workerConfig = options.workerConfig;
    this.#piscina = new Piscina({
      filename: this.#filename,
      minThreads: threads,
      maxThreads: threads,
      // Native calls are synchronous: a second task on a busy thread would only wait behind it.
      concurrentTasksPerWorker: 1,
      atomics: options.atomics ?? DEFAULT_ATOMICS,
      idleTimeout: Number.MAX_SAFE_INTEGER,
      workerData: { board: this.#board.buffer, config: options.workerConfig },
    });
    // A worker that dies is reported through its task; the pool itself must not crash the process.
    this.#piscina.on('error', () => {});
  }

  get threads(): number {
    return this.#piscina.threads.length;
  }

  /** Where link calls run: known once the first one came. */
  get linkThreads(): LinkThreads | undefined {
    if (this.#native !== undefined && this.#native !== null) return 'native';
    return this.#direct !== undefined ? 'workers' : undefined;
  }

  /** Tasks queued and not yet started. */
  get queued(): number {
    return this.#piscina.queueSize + (this.#direct?.queued ?? 0) + (this.#native?.queued ?? 0);
  }

  /**
   * Runs a task; resolves with its reply, or with `{ ok: false }` if the worker died or the task was aborted.
   * @example const reply = await pool.run<RuntimeLinkInfo[]>({ op: 'list', handle });
   */
  run<T>(task: PoolTask, options: RunOptions = {}): Promise<TaskReply<T>> {
    return this.submit<T>(task, options).reply;
  }

  /**
   * Like `run`, also returning the task id (see `threadOf`).
   * @example const { taskId, reply } = pool.submit({ op: 'list', handle });
   */
  submit<T>(task: PoolTask, options: RunOptions = {}): SubmittedTask<T> {
    const taskId = this.#nextTaskId++;
    if (this.#closed)
      return { taskId, reply: Promise.resolve({ ok: false, code: LLM_STATUS.LLM_FAILED, message: 'worker pool is closed' }) };
    if (task.op === 'link' || task.op === 'unlink') {
      const native = this.#nativeCalls();
      if (native !== undefined) return { taskId, reply: native.run<T>(task, options) };
      const reply = this.#directThreads()
        .run<T>({ ...task, taskId }, options)
        .then((r) => {
          // A worker that died mid-task never cleared its slot.
          Atomics.store(this.#board, taskId % BOARD_SLOTS, 0);
          return r;
        });
      return { taskId, reply };
    }
    const runOptions = {
      signal: options.signal ?? null,
      ...(options.transfer !== undefined && options.transfer.length > 0 ? { transferList: [...options.transfer] } : {}),
    } as Parameters<Piscina['run']>[1]; // bun-types' AbortSignal differs from piscina's structural one
    const reply = (this.#piscina.run({ ...task, taskId }, runOptions) as Promise<TaskReply<T>>)
      .catch((cause: unknown): TaskReply<T> => ({ ok: false, code: LLM_STATUS.LLM_FAILED, message: failureMessage(cause) }))
      .finally(() => {
        // A worker that died mid-task never cleared its slot.
        Atomics.store(this.#board, taskId % BOARD_SLOTS, 0);
      });
    return { taskId, reply };
  }

  /** Thread id of the worker running task `taskId`, or 0 when it is not running. */
  threadOf(taskId: number): number {
    return Atomics.load(this.#board, taskId % BOARD_SLOTS);
  }

  /**
   * Terminates the worker running task `taskId` (its task fails, the pool starts a new thread).
   * @example await pool.terminateThreadOf(taskId);
   */
  async terminateThreadOf(taskId: number): Promise<boolean> {
    const id = this.threadOf(taskId);
    if (id === 0) return false;
    const worker = this.#piscina.threads.find((t) => t.threadId === id);
    if (worker === undefined) return (await this.#direct?.terminate(id)) ?? false;
    await worker.terminate();
    return true;
  }

  /** Terminates every thread; tasks still queued or running fail. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([this.#piscina.destroy(), this.#direct?.close(), this.#native?.close()]);
  }

  /** Where link calls run, once the first one comes: the runtime's threads if it can, else undefined. */
  #nativeCalls(): NativeLinkCalls | undefined {
    if (this.#native === undefined) {
      let calls: NativeLinkCalls | undefined;
      try {
        calls = this.#nativeLinks ? NativeLinkCalls.open(this.#threads) : undefined;
      } catch {
        // The runtime does not load on this thread: the worker threads will say why, task by task.
        calls = undefined;
      }
      this.#native = calls ?? null;
    }
    return this.#native ?? undefined;
  }

  #directThreads(): DirectThreads {
    this.#direct ??= new DirectThreads({
      threads: this.#threads,
      filename: this.#filename,
      workerData: { board: this.#board.buffer, config: this.#workerConfig },
    });
    return this.#direct;
  }
}

function failureMessage(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  if ((cause as { name?: unknown })?.name === 'AbortError') return `task aborted: ${message}`;
  if (/worker exited|terminated/i.test(message)) return `worker died: ${message}`;
  return `worker failed: ${message}`;
}
