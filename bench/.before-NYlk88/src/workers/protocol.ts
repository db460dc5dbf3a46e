/**
 * What crosses between the main thread and the pool's workers: tasks as plain data, replies as
 * `{ ok, value }` or `{ ok: false, code, message }`, never Error objects. This is the door where
 * the runtime's numbers (roles, event kinds, sides, link states of pdrt.h) become names: nothing
 * above the workers knows what `side === 1` means.
 */
import type { LinkSide, RuntimeLinkEvent } from '../links/types.ts';
import type { LinkPortLimits } from '../ffi/config.ts';
import { EVENT_KIND, LINK_STATE, SIDE, type PdrtEvent, type RoleName, type RuntimeLinkInfo } from '../ffi/layout.ts';
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

/** Role carried in the runtime handshake: prefill (`prompt`), decode (`decoder`) or both (`mix`). */
export type RuntimeRole = RoleName;

export interface CreateTask {
  readonly op: 'create';
  readonly clusterId: bigint;
  readonly role: RuntimeRole;
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

/** A runtime event of one context (by its handle), as an `events` task answers it. */
export interface ContextEvent extends RuntimeLinkEvent {
  readonly handle: number;
  /** Wall-clock epoch ms at which the runtime queued the event. */
  readonly timeMs: number;
}

/** A link as the runtime itself holds it. */
export type RuntimeLinkState = 'linking' | 'linked' | 'unlinking' | 'unusable' | 'unknown';

/** One link of a context, as a `list` task answers it. */
export interface RuntimeLink {
  readonly remoteClusterId: bigint;
  readonly side: LinkSide;
  readonly state: RuntimeLinkState;
  readonly transfersInFlight: number;
  /** The server's listen address on the client side; the client's source address on the server side. */
  readonly remoteIp: string;
  readonly remotePort: number;
  /** Transfers on this link use shared memory. */
  readonly sameHost: boolean;
}

const EVENT_KINDS = new Map<number, RuntimeLinkEvent['kind']>([
  [EVENT_KIND.peerLost, 'peer-lost'],
  [EVENT_KIND.peerLinked, 'peer-linked'],
  [EVENT_KIND.peerUnlinked, 'peer-unlinked'],
  [EVENT_KIND.linkUnusable, 'link-unusable'],
]);
const LINK_STATES = new Map<number, RuntimeLinkState>(Object.entries(LINK_STATE).map(([name, value]) => [value, name as RuntimeLinkState]));

/**
 * The side a pdrt.h PDRT_SIDE_* number names.
 * @example sideOf(1) // 'server'
 */
export function sideOf(side: number): LinkSide {
  return side === SIDE.server ? 'server' : 'client';
}

/**
 * A pdrt_event in names; undefined for a kind this build does not know (a newer runtime's).
 * @example const event = eventOf(handle, raw);
 */
export function eventOf(handle: number, event: PdrtEvent): ContextEvent | undefined {
  const kind = EVENT_KINDS.get(event.kind);
  if (kind === undefined) return undefined;
  return { handle, kind, side: sideOf(event.side), remoteClusterId: event.remoteClusterId, code: event.code, timeMs: event.timeMs };
}

/**
 * A pdrt_link_info in names.
 * @example const links = runtime.listLinks(handle).map(linkOf);
 */
export function linkOf(link: RuntimeLinkInfo): RuntimeLink {
  return {
    remoteClusterId: link.remoteClusterId,
    side: sideOf(link.side),
    state: LINK_STATES.get(link.state) ?? 'unknown',
    transfersInFlight: link.transfersInFlight,
    remoteIp: link.remoteIp,
    remotePort: link.remotePort,
    sameHost: link.sameHost,
  };
}
