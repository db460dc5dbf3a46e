/**
 * The shapes the link manager speaks: link targets, states, change events, and the executor
 * interface through which batches reach the device runtime (the worker pool in production).
 */
import type { IpPort } from './endpoint.ts';

/** Life of one link: unlinked → linking → linked → unlinking → unlinked; `failed` keeps its code. */
export type LinkState = 'unlinked' | 'linking' | 'linked' | 'unlinking' | 'failed';

/** `client`: this endpoint initiated the link; `server`: the peer linked to us. */
export type LinkSide = 'client' | 'server';

/** One remote cluster as LLM-DataDist names it: id, remote `ip:port`, optional local address. */
export interface ClusterTarget {
  readonly remoteClusterId: bigint;
  readonly remote: IpPort;
  readonly local?: IpPort;
}

/** A target on a given local endpoint (device); the manager's default endpoint when omitted. */
export interface EndpointTarget extends ClusterTarget {
  readonly endpoint?: string;
}

/** What the manager knows of one link. */
export interface LinkInfo {
  readonly endpoint: string;
  readonly remoteClusterId: bigint;
  /** Unknown for server-side links until the runtime reports the peer's address. */
  readonly remote: IpPort | undefined;
  readonly side: LinkSide;
  readonly state: LinkState;
  /** Status code behind a `failed` state (LLM_SUCCESS otherwise). */
  readonly code: number;
  /** Epoch milliseconds of the last state change. */
  readonly since: number;
}

/** Emitted on every state change; `to: 'unlinked'` means the entry is gone. */
export interface LinkEvent {
  readonly endpoint: string;
  readonly remoteClusterId: bigint;
  readonly side: LinkSide;
  readonly from: LinkState;
  readonly to: LinkState;
  readonly code: number;
  /** Why it changed: `link`, `unlink`, `peer-lost`, `peer-linked`, `peer-unlinked`, `link-unusable`, `worker-failed`. */
  readonly reason: string;
}

/** Per-cluster codes of one runtime call, in batch order. */
export interface BatchOutcome {
  readonly rets: readonly number[];
  /**
   * Link calls: for each cluster answered LLM_ALREADY_LINK, the side on which this runtime holds a
   * link to it, or `undefined` when it holds none. LLM-DataDist gives the same code whether this end
   * or the peer still holds the link; only the first is a link. Missing entries mean none.
   */
  readonly holders?: readonly (LinkSide | undefined)[];
  /** Set when the call's outcome is unknown (worker died, task aborted): the runtime may hold partial state. */
  readonly indeterminate?: boolean;
  readonly message?: string;
}

/**
 * Runs link/unlink batches (≤ 16 clusters) against one local endpoint. Never rejects: every
 * failure comes back as per-cluster codes.
 */
export interface LinkExecutor {
  link(endpoint: string, clusters: readonly ClusterTarget[], timeoutMs: number): Promise<BatchOutcome>;
  unlink(endpoint: string, clusters: readonly ClusterTarget[], timeoutMs: number, force: boolean): Promise<BatchOutcome>;
}

/** Result of `linkClusters` / `unlinkClusters`, as LLM-DataDist returns `(ret, rets)`. */
export interface CallResult {
  readonly ret: number;
  readonly rets: readonly number[];
}

/** A runtime event about one link, as the event pump delivers it. */
export interface RuntimeLinkEvent {
  readonly kind: 'peer-lost' | 'peer-linked' | 'peer-unlinked' | 'link-unusable';
  readonly side: LinkSide;
  readonly remoteClusterId: bigint;
  readonly code: number;
  /** Wall-clock epoch ms at which the runtime queued the event (absent: taken as news). */
  readonly timeMs?: number;
}
