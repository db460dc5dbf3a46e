/**
 * Drives one pull or push through the worker pool as slices: up to `parallel` slices run at once
 * on different workers, each claiming chunks from the transfer's shared control array, and a slice
 * that spent its time budget is queued again behind other work. The transfer ends when every
 * slice has returned; the first failure wins, and an abort answers at once when no slice is running.
 */
import { LLM_STATUS, normalizeStatus } from '../../core/llm-status.ts';
import { CONTROL, type BlockReply, type TransferTask } from '../../workers/block-protocol.ts';
import type { WorkerPool } from '../../workers/pool.ts';

export interface SliceRun {
  readonly pool: WorkerPool;
  readonly task: TransferTask;
  /** Slices of this transfer that may run at once. */
  readonly parallel: number;
  readonly signal?: AbortSignal;
}

export interface SliceOutcome {
  readonly rc: number;
  /** Blocks moved, over all slices. */
  readonly moved: number;
  readonly aborted: boolean;
  readonly message?: string;
}

const ABORTED = 'aborted by the caller';

/**
 * Runs the transfer described by `run.task` to its end; never rejects.
 * @example const { rc, moved } = await runSlices({ pool, task, parallel: 2, signal });
 */
export function runSlices(run: SliceRun): Promise<SliceOutcome> {
  const { pool, task, signal } = run;
  const control = new Int32Array(task.control);
  return new Promise((resolve) => {
    let running = 0;
    let failure: { rc: number; message?: string } | undefined;
    let settled = false;
    /** Why the abort flag was set: the caller's signal, or the deadline passing with slices still queued. */
    let stoppedBy: 'caller' | 'deadline' | undefined;
    const moved = (): number => Atomics.load(control, CONTROL.done);
    // Every block moved before the stop took effect: that is a success.
    const stopped = (): SliceOutcome =>
      moved() >= task.n
        ? { rc: LLM_STATUS.LLM_SUCCESS, moved: moved(), aborted: false }
        : stoppedBy === 'deadline'
          ? {
              rc: LLM_STATUS.LLM_TIMEOUT,
              moved: moved(),
              aborted: false,
              message: `deadline passed with ${task.n - moved()} of ${task.n} blocks not moved`,
            }
          : { rc: LLM_STATUS.LLM_FAILED, moved: moved(), aborted: true, message: ABORTED };
    const finish = (outcome: SliceOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const end = (): SliceOutcome => {
      if (failure !== undefined)
        return { rc: failure.rc, moved: moved(), aborted: false, ...(failure.message === undefined ? {} : { message: failure.message }) };
      return stopped();
    };
    const stop = (by: 'caller' | 'deadline'): void => {
      stoppedBy ??= by;
      Atomics.store(control, CONTROL.abort, 1);
      // No slice is running, so none will start a chunk: answer without waiting for the queue
      // (a queued slice, when its turn comes, returns at once). A running slice returns by the
      // deadline anyway: each runtime call gets only the time left.
      if (Atomics.load(control, CONTROL.inSlice) === 0) finish(stopped());
    };
    function onAbort(): void {
      stop('caller');
    }
    // Slices stuck behind other work in the queue must not outlive the caller's timeout.
    const timer = setTimeout(() => stop('deadline'), Math.max(0, task.deadline - Date.now()));
    const launch = (): void => {
      running++;
      void pool.run<BlockReply>(task).then((reply) => {
        running--;
        if (!reply.ok) {
          // The worker died or the pool closed: stop the other slices, keep what was counted.
          Atomics.store(control, CONTROL.failed, 1);
          failure ??= { rc: reply.code, message: reply.message };
        } else if (reply.value.rc !== LLM_STATUS.LLM_SUCCESS) {
          failure ??= {
            rc: normalizeStatus(reply.value.rc),
            ...(reply.value.message === undefined ? {} : { message: reply.value.message }),
          };
        } else if (reply.value.end === 'sliced' && failure === undefined && Atomics.load(control, CONTROL.abort) === 0) {
          launch();
          return;
        }
        if (running === 0) finish(end());
      });
    };
    if (signal?.aborted === true) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    if (settled) return;
    const slices = Math.max(1, Math.min(run.parallel, Math.ceil(task.n / task.chunkBlocks)));
    for (let i = 0; i < slices; i++) launch();
  });
}
