/**
 * How a link or unlink task and its answer cross to a link thread and back: as flat arrays of
 * primitives rather than nested objects. The runtime's structured clone costs about a microsecond
 * per object it meets; a one-cluster task as objects took ≈ 8 µs to clone and its reply ≈ 2 µs,
 * as arrays ≈ 2 µs and under 0.1 µs, on the path of every link call. Anything else (other
 * encodings, failures, answers with holders) travels as it is.
 */
import type { LinkReply, LinkTask, TaskReply, WorkerCluster } from './protocol.ts';

/** Fields of a packed task before its clusters, and of each cluster. */
const HEAD = 7;
const PER_CLUSTER = 5;
/** First element of a packed task (a packed reply starts with a number). */
const TASK_MARK = 'link-task';

type Packed = readonly unknown[];

/**
 * A clone-encoded link/unlink task as one flat array; any other task as it is.
 * @example worker.postMessage(packTask({ ...task, taskId }));
 */
export function packTask(task: unknown): unknown {
  const t = task as Partial<LinkTask> & { readonly taskId?: number };
  if ((t.op !== 'link' && t.op !== 'unlink') || t.batch?.enc !== 'clone') return task;
  const clusters = t.batch.clusters;
  const out: unknown[] = [TASK_MARK, t.op, t.handle, t.timeoutMs, t.deadline, t.force, t.taskId];
  for (const c of clusters) out.push(c.id, c.ip, c.port, c.localIp, c.localPort);
  return out;
}

/**
 * The task `packTask` packed, as the worker module expects it.
 * @example run(unpackTask(message));
 */
export function unpackTask(message: unknown): unknown {
  if (!Array.isArray(message) || message[0] !== TASK_MARK) return message;
  const m = message as Packed;
  const clusters: WorkerCluster[] = [];
  for (let i = HEAD; i + PER_CLUSTER <= m.length; i += PER_CLUSTER) {
    clusters.push({
      id: m[i] as bigint,
      ip: m[i + 1] as string,
      port: m[i + 2] as number,
      localIp: m[i + 3] as string,
      localPort: m[i + 4] as number,
    });
  }
  return {
    op: m[1],
    handle: m[2],
    timeoutMs: m[3],
    deadline: m[4],
    force: m[5],
    taskId: m[6],
    batch: { enc: 'clone', clusters },
  };
}

/**
 * A successful link/unlink answer without holders as `[rc, ...rets]`; anything else as it is.
 * @example port.postMessage(packReply(run(task)));
 */
export function packReply(reply: unknown): unknown {
  const r = reply as TaskReply<LinkReply> | undefined;
  if (r?.ok !== true || r.value === null || typeof r.value !== 'object') return reply;
  const value = r.value;
  if (typeof value.rc !== 'number' || !Array.isArray(value.rets) || value.holders !== undefined || Object.keys(value).length !== 2)
    return reply;
  return [value.rc, ...value.rets];
}

/**
 * The answer `packReply` packed.
 * @example const reply = unpackReply<LinkReply>(message);
 */
export function unpackReply<T>(message: unknown): TaskReply<T> {
  if (!Array.isArray(message)) return message as TaskReply<T>;
  return { ok: true, value: { rc: message[0] as number, rets: message.slice(1) as number[] } as T };
}
