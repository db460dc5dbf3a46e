/**
 * `GET /v1/status` of the instance agent: the role state (`service.roleStatus`,
 * `service.currentRole`, MindIE's names) and one row per desired link (`linkStatus.peers`), with
 * counts and the last error so an operator sees why a role is not ready.
 */
import { clusterIdToWire, formatIpPort } from '../links/endpoint.ts';
import { statusName, type StatusName } from '../core/llm-status.ts';
import type { LinkInfo } from '../links/types.ts';
import type { Role } from '../schema/role.ts';
import type { PlannedLink } from './role/plan.ts';

/** MindIE's role states: no role yet; a role post being applied or links not all up; every desired link up. */
export type RoleStatusName = 'RoleUnknown' | 'RoleSwitching' | 'RoleReady';

/** State of one desired link as the status shows it. */
export type LinkView = 'ok' | 'linking' | `failed: ${StatusName}`;

/** Retry bookkeeping the role driver keeps for one desired link. */
export interface RetryState {
  /** Consecutive failed attempts (0 once linked). */
  readonly failures: number;
  /** Code of the last failure, until the link is up again. */
  readonly lastCode: number | undefined;
  /** Clock time of the next attempt, when one is scheduled. */
  readonly nextAttemptAt: number | undefined;
}

export interface PeerLinkStatus {
  /** Peer's `server_ip`; null when the role request left it out. */
  readonly target: string | null;
  readonly device: number;
  readonly link: LinkView;
  /** Local device (logical id) of the pair. */
  readonly localDevice: number;
  readonly peerDevice: number;
  /** The peer device's link address, `ip:port`. */
  readonly remote: string;
  readonly remoteClusterId: number | string;
  readonly failures: number;
  /** Milliseconds until the next attempt, when one is scheduled. */
  readonly retryInMs?: number;
}

/**
 * MindIE's `resource` block: the engine's free and total slots (requests it can run) and KV
 * blocks. The engine that embeds the agent fills it; the controller sends it on as dynamic_info.
 */
export interface ResourceReport {
  readonly totalSlotsNum: number;
  readonly availSlotsNum: number;
  readonly totalBlockNum: number;
  readonly availBlockNum: number;
}

export interface StatusBody {
  readonly service: {
    readonly roleStatus: RoleStatusName;
    readonly currentRole: Role | 'none';
    /** Role of the post being applied, when one is. */
    readonly switchingTo?: Role;
    /** Posts accepted and waiting behind the one being applied. */
    readonly queuedPosts: number;
    readonly lastError?: { readonly message: string; readonly at: string };
  };
  readonly linkStatus: {
    readonly desired: number;
    readonly ok: number;
    readonly linking: number;
    readonly failed: number;
    readonly peers: readonly PeerLinkStatus[];
  };
  /** Only when the embedding engine reports its resources. */
  readonly resource?: ResourceReport;
}

/**
 * State of a desired link: `ok` when the link manager holds it linked (either side; a link serves
 * both directions), `failed: <code>` while a failure waits for its retry, `linking` otherwise
 * (an attempt in flight, or, on the prefill side, waiting for the decode peer to link).
 * @example linkView(manager.get('0', 7n), retry) // 'failed: LLM_LINK_FAILED'
 */
export function linkView(entry: LinkInfo | undefined, retry: RetryState | undefined, stale = false): LinkView {
  if (entry?.state === 'linked' && !stale) return 'ok';
  if (entry?.state === 'linking' || entry?.state === 'unlinking') return 'linking';
  if (entry?.state === 'failed') return `failed: ${statusName(entry.code)}`;
  if (retry?.lastCode !== undefined) return `failed: ${statusName(retry.lastCode)}`;
  return 'linking';
}

export interface StatusInput {
  readonly roleStatus: RoleStatusName;
  readonly currentRole: Role | undefined;
  readonly switchingTo: Role | undefined;
  readonly queuedPosts: number;
  readonly lastError: { readonly message: string; readonly at: number } | undefined;
  readonly links: readonly { readonly plan: PlannedLink; readonly view: LinkView; readonly retry: RetryState | undefined }[];
  readonly now: number;
  readonly resource?: ResourceReport | undefined;
}

/**
 * Renders the status body.
 * @example c.json(statusBody({ roleStatus: 'RoleReady', currentRole: 'decode', ... }))
 */
export function statusBody(input: StatusInput): StatusBody {
  let ok = 0;
  let failed = 0;
  const peers = input.links.map(({ plan, view, retry }): PeerLinkStatus => {
    if (view === 'ok') ok++;
    else if (view !== 'linking') failed++;
    const row: PeerLinkStatus = {
      target: plan.target ?? null,
      device: plan.device,
      link: view,
      localDevice: Number(plan.endpoint),
      peerDevice: plan.peerLogicalId,
      remote: formatIpPort(plan.remote),
      remoteClusterId: clusterIdToWire(plan.remoteClusterId),
      failures: retry?.failures ?? 0,
    };
    const due = retry?.nextAttemptAt;
    return view === 'ok' || due === undefined ? row : { ...row, retryInMs: Math.max(0, Math.round(due - input.now)) };
  });
  return {
    service: {
      roleStatus: input.roleStatus,
      currentRole: input.currentRole ?? 'none',
      ...(input.switchingTo === undefined ? {} : { switchingTo: input.switchingTo }),
      queuedPosts: input.queuedPosts,
      ...(input.lastError === undefined
        ? {}
        : { lastError: { message: input.lastError.message, at: new Date(input.lastError.at).toISOString() } }),
    },
    linkStatus: { desired: peers.length, ok, linking: peers.length - ok - failed, failed, peers },
    ...(input.resource === undefined ? {} : { resource: input.resource }),
  };
}
