/**
 * What crosses between the main thread and the pool's workers: tasks as plain data, replies as
 * `{ ok, value }` or `{ ok: false, code, message }`, never Error objects.
 */
import type { LinkSide } from '../links/types.ts';
import type { LinkPortLimits } from '../ffi/config.ts';
import type { BlockTask } from './block-protocol.ts';

/** How link/unlink batches travel to a worker (tuned by bench/pool.bench.ts). */
export type Encoding = 'clone' | 'msgpack' | 'shared';
export const ENCODINGS: readonly Encoding[] = ['clone', 'msgpack', 'shared'];

/** One cluster of a batch, in the runtime's terms. */
export interface WorkerCluster {
  readonly id: bigint;
  readonly ip: string;
  readonly port: number;
  /** "" = any local address. */
  readonly localIp: string;
  /** 0 = any local port. */
  readonly localPort: number;
}

/** The clusters of a batch in one of the three encodings. */
export type EncodedClusters =
  | { readonly enc: 'clone'; readonly clusters: readonly WorkerCluster[] }
  | { readonly enc: 'msgpack'; readonly packed: Uint8Array }
  /** pdrt_cluster records (144 bytes each) followed by n int32 rets the worker fills in. */
  | { readonly enc: 'shared'; readonly buffer: SharedArrayBuffer; readonly n: number };

export interface LinkTask {
  readonly op: 'link' | 'unlink';
  readonly handle: number;
  readonly timeoutMs: number;
  /** Epoch ms by which the call must have returned: time spent queued counts against the timeout. */
  readonly deadline: number;
  readonly force: boolean;
  readonly batch: EncodedClusters;
}

export interface CreateTask {
  readonly op: 'create';
  readonly clusterId: bigint;
  readonly role: number;
  readonly listenIp: string | null;
  readonly listenPort: number;
  readonly security?: ContextSecurity;
}

/** The link port's trust settings of a context: its cluster secret and caps. */
export interface ContextSecurity {
  /** Links must prove this cluster secret (absent: not authenticated, the loopback default). */
  readonly linkSecret?: Uint8Array;
  readonly linkPort?: LinkPortLimits;
}

export interface HandleTask {
  readonly op: 'destroy' | 'list';
  readonly handle: number;
}

export interface EventsTask {
  readonly op: 'events';
  readonly handles: readonly number[];
  /** Longest time the task may wait for an event before returning an empty list. */
  readonly waitMs: number;
}

export type WorkerTask = (LinkTask | CreateTask | HandleTask | EventsTask | BlockTask) & { readonly taskId: number };

export type TaskReply<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly code: number; readonly message: string };

/** Value of a link/unlink reply; with the shared encoding `rets` is empty and the codes are in the buffer. */
export interface LinkReply {
  readonly rc: number;
  readonly rets: readonly number[];
  /** Link calls with LLM_ALREADY_LINK answers: see BatchOutcome.holders. */
  readonly holders?: readonly (LinkSide | undefined)[];
}

export interface RuntimeEvent {
  readonly handle: number;
  readonly kind: number;
  readonly side: number;
  readonly remoteClusterId: bigint;
  readonly code: number;
  readonly timeMs: number;
}

export interface RuntimeLink {
  readonly remoteClusterId: bigint;
  readonly side: number;
  readonly state: number;
  readonly transfersInFlight: number;
  readonly remoteIp: string;
  readonly remotePort: number;
  readonly sameHost: boolean;
}
