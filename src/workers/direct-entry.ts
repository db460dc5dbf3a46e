/**
 * Entry point of the direct threads (direct-threads.ts): loads the pool's worker module and runs
 * each task that arrives with its default export, answering with one message. The first message
 * says the module is loaded, so no task is sent before someone listens for it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { LLM_STATUS } from '../core/llm-status.ts';
import { packReply, unpackTask } from './link-wire.ts';

type Run = (task: unknown) => unknown;

const port = parentPort!;
const run = ((await import((workerData as { filename: string }).filename)) as { default: Run }).default;

const failed = (cause: unknown) => ({
  ok: false,
  code: LLM_STATUS.LLM_FAILED,
  message: `worker failed: ${cause instanceof Error ? cause.message : String(cause)}`,
});

port.on('message', (message: unknown) => {
  let reply: unknown;
  try {
    reply = run(unpackTask(message));
  } catch (cause) {
    port.postMessage(failed(cause));
    return;
  }
  if (typeof (reply as PromiseLike<unknown> | undefined)?.then === 'function') {
    (reply as PromiseLike<unknown>).then(
      (value) => port.postMessage(packReply(value)),
      (cause: unknown) => port.postMessage(failed(cause)),
    );
  } else port.postMessage(packReply(reply));
});
port.postMessage('ready');
