/**
 * Entry point of the pool's worker threads: runs each task against the device runtime.
 * With src/ffi, the only place that loads the native library.
 */
import { workerData } from 'node:worker_threads';
import type { WorkerTask } from './protocol.ts';
import { ffiRuntime } from './runtime.ts';
import { runTask } from './tasks.ts';

const board = new Int32Array((workerData as { board: SharedArrayBuffer }).board);

export default function run(task: WorkerTask) {
  return runTask(ffiRuntime, task, board);
}
