/**
 * What the controller reads from an agent's `GET /v1/status`: role state, the peers whose every
 * device link is `ok`, and MindIE's `resource` block. Read loosely (an agent of another version may
 * add or lack fields); anything unreadable counts as no answer.
 */

/** MindIE's `resource` block: what the engine has free and in total. */
export interface AgentResources {
  readonly totalSlots: number;
  readonly availSlots: number;
  readonly totalBlocks: number;
  readonly availBlocks: number;
}

export interface AgentObservation {
  readonly roleStatus: string;
  /** `prefill`, `decode` or `none`. */
  readonly currentRole: string;
  /** Role of a post being applied or queued, when any. */
  readonly pendingRole: string | undefined;
  readonly queuedPosts: number;
  /** server_ip of every peer whose links are all `ok`. */
  readonly linkedPeers: ReadonlySet<string>;
  /** server_ip → the code of a failed link to that peer (`LLM_LINK_FAILED`), for the topology page. */
  readonly linkFailures: ReadonlyMap<string, string>;
  readonly resources: AgentResources | undefined;
}

/**
 * Reads a status body; undefined when it is not one.
 * @example readAgentStatus(await res.json())?.roleStatus // 'RoleReady'
 */
export function readAgentStatus(body: unknown): AgentObservation | undefined {
  if (!isObject(body) || !isObject(body['service'])) return undefined;
  const service = body['service'];
  if (typeof service['roleStatus'] !== 'string' || typeof service['currentRole'] !== 'string') return undefined;
  const peers = isObject(body['linkStatus']) && Array.isArray(body['linkStatus']['peers']) ? body['linkStatus']['peers'] : [];
  // One row per (peer, device): a peer counts as linked only if every one of its rows is ok.
  const linked = new Set<string>();
  const notLinked = new Set<string>();
  const failures = new Map<string, string>();
  for (const row of peers) {
    if (!isObject(row) || typeof row['target'] !== 'string') continue;
    if (row['link'] === 'ok') linked.add(row['target']);
    else notLinked.add(row['target']);
    if (typeof row['link'] === 'string' && row['link'].startsWith('failed')) {
      failures.set(row['target'], row['link'].replace(/^failed:?\s*/, '') || 'failed');
    }
  }
  for (const target of notLinked) linked.delete(target);
  return {
    roleStatus: service['roleStatus'],
    currentRole: service['currentRole'],
    pendingRole: typeof service['switchingTo'] === 'string' ? service['switchingTo'] : undefined,
    queuedPosts: typeof service['queuedPosts'] === 'number' ? service['queuedPosts'] : 0,
    linkedPeers: linked,
    linkFailures: failures,
    resources: readResources(body['resource']),
  };
}

/**
 * Whether a new status changes what the snapshot's shape reads: linked peers, totals, role state.
 * @example if (shapeChanged(member.observation, next)) dirty = true;
 */
export function shapeChanged(before: AgentObservation | undefined, after: AgentObservation): boolean {
  if (before === undefined) return true;
  if (before.roleStatus !== after.roleStatus || before.currentRole !== after.currentRole) return true;
  if (before.linkedPeers.size !== after.linkedPeers.size) return true;
  for (const peer of after.linkedPeers) if (!before.linkedPeers.has(peer)) return true;
  const a = before.resources;
  const b = after.resources;
  return a?.totalSlots !== b?.totalSlots || a?.totalBlocks !== b?.totalBlocks;
}

function readResources(value: unknown): AgentResources | undefined {
  if (!isObject(value)) return undefined;
  const n = (key: string): number | undefined => {
    const x = value[key];
    return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : undefined;
  };
  const totalSlots = n('totalSlotsNum');
  const availSlots = n('availSlotsNum');
  const totalBlocks = n('totalBlockNum');
  const availBlocks = n('availBlockNum');
  if (totalSlots === undefined || availSlots === undefined || totalBlocks === undefined || availBlocks === undefined) return undefined;
  return { totalSlots, availSlots, totalBlocks, availBlocks };
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
