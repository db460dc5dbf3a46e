/**
 * Runs one pool task inside a worker against a DeviceRuntime and turns every outcome, thrown
 * errors included, into a plain reply. Each task marks the board slot of its id with the
 * worker's thread id while it runs, so the main thread can tell which thread holds a task.
 */
import { threadId } from 'node:worker_threads';
import { LINK_STATE } from '../ffi/layout.ts';
import { LLM_STATUS, normalizeStatus } from '../core/llm-status.ts';
import { runBlockTask } from './block-tasks.ts';
import type { DeviceRuntime } from './device-runtime.ts';
import { decodeClusters, sharedRecords, sharedRets } from './encoding.ts';
import type { LinkSide } from '../links/types.ts';
import {
  eventOf,
  linkOf,
  sideOf,
  type ContextEvent,
  type EventsTask,
  type LinkReply,
  type LinkTask,
  type TaskReply,
  type WorkerTask,
} from './protocol.ts';

/** Slots of the shared task board (task id modulo this). */
export const BOARD_SLOTS = 4096;
/** Events copied per poll of one context. */
const EVENT_BATCH = 64;

/**
 * Runs `task`; never throws.
 * @example export default (task: WorkerTask) => runTask(runtime, task, board);
 */
export function runTask(runtime: DeviceRuntime, task: WorkerTask, board: Int32Array | undefined): TaskReply<unknown> {
  const slot = task.taskId % BOARD_SLOTS;
  if (board !== undefined) Atomics.store(board, slot, threadId);
  try {
    return { ok: true, value: dispatch(runtime, task) };
  } catch (cause) {
    const code =
      typeof (cause as { code?: unknown })?.code === 'number' ? normalizeStatus((cause as { code: number }).code) : LLM_STATUS.LLM_FAILED;
    return { ok: false, code, message: cause instanceof Error ? cause.message : String(cause) };
  } finally {
    if (board !== undefined) Atomics.compareExchange(board, slot, threadId, 0);
  }
}

function dispatch(runtime: DeviceRuntime, task: WorkerTask): unknown {
  switch (task.op) {
    case 'link':
    case 'unlink':
      return linkOrUnlink(runtime, task);
    case 'create':
      return runtime.create(task.clusterId, task.role, task.listenIp, task.listenPort, task.security);
    case 'destroy':
      runtime.destroy(task.handle);
      return null;
    case 'list':
      return runtime.listLinks(task.handle).map(linkOf);
    case 'events':
      return waitForEvents(runtime, task);
    case 'kv-register':
    case 'kv-unregister':
    case 'kv-write':
    case 'kv-read':
    case 'kv-pull':
    case 'kv-push':
    case 'kv-fastpath':
      return runBlockTask(runtime.blocks, task);
  }
}

function linkOrUnlink(runtime: DeviceRuntime, task: LinkTask): LinkReply {
  const batch = task.batch;
  const raw = task.op === 'link' ? runtime.linkRecords : runtime.unlinkRecords;
  if (batch.enc === 'shared' && raw !== undefined && task.deadline - Date.now() >= 1) {
    const rets = sharedRets(batch.buffer, batch.n);
    const timeoutMs = Math.max(1, Math.min(task.timeoutMs, Math.floor(task.deadline - Date.now())));
    const records = sharedRecords(batch.buffer, batch.n);
    const rc = normalizeStatus(
      task.op === 'link'
        ? runtime.linkRecords!(task.handle, records, batch.n, timeoutMs, rets)
        : runtime.unlinkRecords!(task.handle, records, batch.n, timeoutMs, task.force, rets),
    );
    if (rc !== LLM_STATUS.LLM_SUCCESS && rc !== LLM_STATUS.LLM_FAILED) rets.fill(rc);
    else for (let i = 0; i < rets.length; i++) rets[i] = normalizeStatus(rets[i] ?? LLM_STATUS.LLM_FAILED);
    return withHolders(runtime, task, rets, { rc, rets: [] });
  }
  const clusters = decodeClusters(batch);
  const remaining = task.deadline - Date.now();
  let rc: number;
  let rets: number[];
  if (remaining < 1) {
    // The batch waited in the queue for its whole timeout: fail it without touching the runtime.
    rc = LLM_STATUS.LLM_FAILED;
    rets = clusters.map(() => LLM_STATUS.LLM_TIMEOUT);
  } else {
    const timeoutMs = Math.max(1, Math.min(task.timeoutMs, Math.floor(remaining)));
    const result =
      task.op === 'link' ? runtime.link(task.handle, clusters, timeoutMs) : runtime.unlink(task.handle, clusters, timeoutMs, task.force);
    rc = normalizeStatus(result.rc);
    // A call refused as a whole leaves rets untouched: every cluster gets the call's code.
    const whole = rc !== LLM_STATUS.LLM_SUCCESS && rc !== LLM_STATUS.LLM_FAILED;
    rets = clusters.map((_, i) => (whole ? rc : normalizeStatus(result.rets[i] ?? LLM_STATUS.LLM_FAILED)));
  }
  if (task.batch.enc === 'shared') {
    sharedRets(task.batch.buffer, task.batch.n).set(rets);
    return withHolders(runtime, task, rets, { rc, rets: [] });
  }
  return withHolders(runtime, task, rets, { rc, rets });
}

/**
 * Adds, for a link call with LLM_ALREADY_LINK answers, which of those links this runtime holds
 * linked: the code is the same whether this end or the peer still holds the link, and only the
 * first is a link (the peer holds its end alone after a forced unlink here). A link held unusable
 * is not one either: it must be unlinked first. Asked right after the call, on the same thread,
 * while the manager keeps every other call on these clusters out.
 */
function withHolders(runtime: DeviceRuntime, task: LinkTask, rets: ArrayLike<number>, reply: LinkReply): LinkReply {
  if (task.op !== 'link' || !Array.prototype.some.call(rets, (r) => r === LLM_STATUS.LLM_ALREADY_LINK)) return reply;
  let held: Map<bigint, LinkSide>;
  try {
    held = new Map(
      runtime
        .listLinks(task.handle)
        .filter((l) => l.state === LINK_STATE.linked)
        .map((l) => [l.remoteClusterId, sideOf(l.side)]),
    );
  } catch {
    // Unknown: the refusal stands as a failure, which the owner of the link clears and retries.
    return reply;
  }
  const clusters = decodeClusters(task.batch);
  const holders = clusters.map((c, i) => (rets[i] === LLM_STATUS.LLM_ALREADY_LINK ? held.get(c.id) : undefined));
  return { ...reply, holders };
}

function waitForEvents(runtime: DeviceRuntime, task: EventsTask): ContextEvent[] {
  const deadline = Date.now() + task.waitMs;
  // With several contexts, wait on each in turn for a short slice so none waits a whole period.
  const slice = Math.max(5, Math.floor(task.waitMs / Math.max(1, task.handles.length)));
  for (let turn = 0; ; turn++) {
    const events = task.handles.flatMap((handle) => drain(runtime, handle));
    if (events.length > 0) return events;
    const left = deadline - Date.now();
    const handle = task.handles[turn % Math.max(1, task.handles.length)];
    if (left <= 0 || handle === undefined) return [];
    runtime.waitEvents(handle, Math.min(slice, left));
  }
}

function drain(runtime: DeviceRuntime, handle: number): ContextEvent[] {
  const out: ContextEvent[] = [];
  for (;;) {
    const batch = runtime.pollEvents(handle, EVENT_BATCH);
    for (const e of batch) {
      const event = eventOf(handle, e);
      if (event !== undefined) out.push(event);
    }
    if (batch.length < EVENT_BATCH) return out;
  }
}
