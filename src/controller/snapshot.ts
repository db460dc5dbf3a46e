/**
 * The refresh snapshot the controller sends every Coordinator, by MindIE's rules: only reachable
 * instances that have been ready in their role; `peers` on P and D alike list only peers of the
 * snapshot whose link is `ok`; a P or D left with no peer is left out (which can empty another's
 * peers, so the rule runs to a fixed point). Pure: the loop feeds it what it observed.
 */
import type { Role } from '../schema/role.ts';
import type { AgentResources } from './agent-status.ts';
import type { KvEventsEndpoints, StaticDefaults } from './types.ts';

/** One instance the loop counts as serving, with what it observed of it. */
export interface SnapshotCandidate {
  readonly id: number;
  readonly role: Role;
  readonly group: number;
  /** Where the Coordinator sends inference requests. */
  readonly ip: string;
  readonly port: number;
  readonly metricPort: number;
  readonly modelName: string;
  readonly staticInfo: StaticDefaults;
  readonly kvEvents?: KvEventsEndpoints;
  readonly resources: AgentResources | undefined;
  /** Ids of the peers whose links this instance reports `ok`. */
  readonly linkedPeers: readonly number[];
}

export interface RefreshInstanceBody {
  id: number;
  ip: string;
  port: string;
  metric_port: string;
  model_name: string;
  static_info: {
    group_id: number;
    max_seq_len: number;
    max_output_len: number;
    total_slots_num: number;
    total_block_num: number;
    block_size: number;
    label: 2 | 3;
    role: 80 | 68;
  };
  dynamic_info: { avail_slots_num: number; avail_block_num: number; peers: number[] };
  kv_events_endpoint?: string;
  kv_events_replay_endpoint?: string;
  kv_events_dp_size?: number;
}

export interface RefreshBody {
  ids: number[];
  instances: RefreshInstanceBody[];
}

/**
 * The ids that make it into the snapshot and the peers each lists.
 * @example servingPeers(candidates).get(200) // [100, 101]
 */
export function servingPeers(candidates: readonly SnapshotCandidate[]): Map<number, number[]> {
  const roles = new Map(candidates.map((c) => [c.id, c.role]));
  let peers = new Map(candidates.map((c) => [c.id, c.linkedPeers.filter((p) => roles.has(p) && roles.get(p) !== c.role)]));
  for (;;) {
    const kept = new Map([...peers].filter(([, list]) => list.length > 0));
    let changed = kept.size !== peers.size;
    for (const [id, list] of kept) {
      const still = list.filter((p) => kept.has(p));
      if (still.length === list.length) continue;
      changed = true;
      kept.set(id, still);
    }
    peers = kept;
    if (!changed) return peers;
  }
}

/**
 * The full refresh body.
 * @example await post(`${coordinator}/v1/instances/refresh`, composeSnapshot(candidates));
 */
export function composeSnapshot(candidates: readonly SnapshotCandidate[]): RefreshBody {
  const peers = servingPeers(candidates);
  const instances = candidates
    .filter((c) => peers.has(c.id))
    .sort((a, b) => a.id - b.id)
    .map((c) => instanceBody(c, peers.get(c.id)!));
  return { ids: instances.map((i) => i.id), instances };
}

function instanceBody(c: SnapshotCandidate, peers: number[]): RefreshInstanceBody {
  const s = c.staticInfo;
  const r = c.resources;
  const totalSlots = clamp(r?.totalSlots ?? s.totalSlots, 1, 5000);
  const totalBlocks = Math.max(1, r?.totalBlocks ?? s.totalBlocks);
  const maxSeqLen = Math.max(2, s.maxSeqLen);
  const prefill = c.role === 'prefill';
  return {
    id: c.id,
    ip: c.ip,
    port: String(c.port),
    metric_port: String(c.metricPort),
    model_name: c.modelName,
    static_info: {
      group_id: c.group,
      max_seq_len: maxSeqLen,
      max_output_len: clamp(s.maxOutputLen, 1, maxSeqLen - 1),
      total_slots_num: totalSlots,
      total_block_num: totalBlocks,
      block_size: clamp(s.blockSize, 1, 128),
      label: prefill ? 2 : 3,
      role: prefill ? 80 : 68,
    },
    dynamic_info: {
      avail_slots_num: clamp(r?.availSlots ?? totalSlots, 0, totalSlots),
      avail_block_num: clamp(r?.availBlocks ?? totalBlocks, 0, totalBlocks),
      peers: [...peers].sort((a, b) => a - b),
    },
    ...kvEventsFields(c.kvEvents),
  };
}

/** The refresh entry's KV-event fields (src/kv-events/topology.ts reads them). */
function kvEventsFields(
  kv: KvEventsEndpoints | undefined,
): Pick<RefreshInstanceBody, 'kv_events_endpoint' | 'kv_events_replay_endpoint' | 'kv_events_dp_size'> {
  if (kv === undefined) return {};
  return {
    kv_events_endpoint: kv.endpoint,
    ...(kv.replayEndpoint === undefined ? {} : { kv_events_replay_endpoint: kv.replayEndpoint }),
    ...(kv.dpSize === undefined ? {} : { kv_events_dp_size: kv.dpSize }),
  };
}

function clamp(x: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, x));
}
