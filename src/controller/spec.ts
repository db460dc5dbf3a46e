/**
 * From the topology file's wire shape (and MindIE's inputs) to the controller's TopologySpec:
 * timings in ms with precedence file > ms_controller.json > defaults (MindIE's with an
 * ms_controller.json, pdlink's faster ones without), rates likewise, each
 * instance's devices from its entry or else the rank table's server of the same server_ip, and
 * static info from the entry, the file's defaults, then built-in ones.
 */
import type { FieldIssue } from '../core/errors.ts';
import { conflicts } from './conflicts.ts';
import type { InstanceEntry, MsControllerFile, RankTableFile, TopologyFile } from '../schema/controller-topology.ts';
import { MINDIE_TIMING, PDLINK_TIMING, type TopologySpec, type DesiredDevice, type DesiredInstance, type StaticDefaults } from './types.ts';

/** Static info when neither the engine nor the file says (the seed's example values). */
export const DEFAULT_STATIC: StaticDefaults = { maxSeqLen: 2048, maxOutputLen: 512, totalSlots: 200, totalBlocks: 1024, blockSize: 128 };

type StaticWire = NonNullable<TopologyFile['static_info']>;

/** Devices of each server of a rank table, by server_ip. */
export type RankDevices = ReadonlyMap<string, readonly DesiredDevice[]>;

/**
 * The devices a rank table gives each server.
 * @example rankDevices(table).get('10.0.0.1') // [{ logicalId: '0', ip: '10.1.0.1' }, ...]
 */
export function rankDevices(table: RankTableFile | undefined): RankDevices {
  const out = new Map<string, DesiredDevice[]>();
  for (const server of table?.server_list ?? [])
    out.set(
      server.server_ip,
      server.device.map((d) => ({ logicalId: d.device_id, ip: d.device_ip })),
    );
  return out;
}

/**
 * One instance entry as the controller holds it; issues name `devices` when neither the entry
 * nor the rank table lists them.
 * @example desiredInstance(entry, 'instances[0]', {}, new Map())
 */
export function desiredInstance(
  entry: InstanceEntry,
  path: string,
  defaults: StaticWire,
  devices: RankDevices,
): { ok: true; instance: DesiredInstance } | { ok: false; issues: FieldIssue[] } {
  const list = entry.devices?.map((d) => ({ logicalId: d.device_logical_id, ip: d.device_ip })) ?? devices.get(entry.server_ip);
  if (list === undefined || list.length === 0) {
    return {
      ok: false,
      issues: [{ path: join(path, 'devices'), message: `is required (no rank table server has server_ip ${entry.server_ip})` }],
    };
  }
  const s = { ...defaults, ...entry.static_info };
  const maxSeqLen = s.max_seq_len ?? DEFAULT_STATIC.maxSeqLen;
  const maxOutputLen = s.max_output_len ?? Math.min(DEFAULT_STATIC.maxOutputLen, maxSeqLen - 1);
  if (maxOutputLen > maxSeqLen - 1) {
    return {
      ok: false,
      issues: [{ path: join(path, 'static_info.max_output_len'), message: `must be <= max_seq_len - 1 (${maxSeqLen - 1})` }],
    };
  }
  return {
    ok: true,
    instance: {
      id: entry.id,
      manageUrl: entry.manage_url.replace(/\/+$/, ''),
      inferenceUrl: entry.inference_url.replace(/\/+$/, ''),
      modelName: entry.model_name,
      serverIp: entry.server_ip,
      devices: list,
      role: entry.role ?? undefined,
      staticInfo: {
        maxSeqLen,
        maxOutputLen,
        totalSlots: s.total_slots_num ?? DEFAULT_STATIC.totalSlots,
        totalBlocks: s.total_block_num ?? DEFAULT_STATIC.totalBlocks,
        blockSize: s.block_size ?? DEFAULT_STATIC.blockSize,
      },
      ...(entry.kv_events_endpoint === undefined
        ? {}
        : {
            kvEvents: {
              endpoint: entry.kv_events_endpoint,
              replayEndpoint: entry.kv_events_replay_endpoint,
              dpSize: entry.kv_events_dp_size,
            },
          }),
    },
  };
}

/**
 * The whole spec of a topology file with its MindIE inputs already read.
 * @example const result = clusterSpec(file, msController, rankTable);
 */
export function clusterSpec(
  file: TopologyFile,
  ms: MsControllerFile | undefined,
  table: RankTableFile | undefined,
): { ok: true; spec: TopologySpec } | { ok: false; issues: FieldIssue[] } {
  const t = file.timing ?? {};
  // A MindIE deployment keeps MindIE's timings; pdlink's own file gets the ones that make a death short.
  const timingDefaults = ms === undefined ? 'pdlink' : 'mindie';
  const base = ms === undefined ? PDLINK_TIMING : MINDIE_TIMING;
  const ms1000 = (x: number | undefined, fallback: number): number => (x === undefined ? fallback : Math.round(x * 1000));
  const devices = rankDevices(table);
  const issues: FieldIssue[] = [];
  const instances: DesiredInstance[] = [];
  file.instances.forEach((entry, i) => {
    const result = desiredInstance(entry, `instances[${i}]`, file.static_info ?? {}, devices);
    if (result.ok) instances.push(result.instance);
    else issues.push(...result.issues);
  });
  if (issues.length > 0) return { ok: false, issues };
  const named = instances.map((spec, i) => ({ spec, path: `instances[${i}]`, name: `instances[${i}]` }));
  const clashes = conflicts([], named).map(({ path, message }) => ({ path, message }));
  if (clashes.length > 0) return { ok: false, issues: clashes };
  return {
    ok: true,
    spec: {
      coordinators: file.coordinators.map((u) => u.replace(/\/+$/, '')),
      timingDefaults,
      timing: {
        syncMs: ms1000(t.cluster_synchronization_seconds ?? ms?.cluster_synchronization_seconds, base.syncMs),
        roleRetryMs: ms1000(t.role_retry_seconds ?? ms?.role_retry_seconds, base.roleRetryMs),
        heartbeatTimeoutMs: ms1000(t.instance_heartbeat_timeout_seconds ?? ms?.instance_heartbeat_timeout, base.heartbeatTimeoutMs),
        statusPollMs: ms1000(t.status_poll_seconds, base.statusPollMs),
        httpTimeoutMs: ms1000(t.http_timeout_seconds ?? ms?.http_timeout_seconds, base.httpTimeoutMs),
        drainTimeoutMs: ms1000(t.drain_timeout_seconds, base.drainTimeoutMs),
      },
      rates: { p: file.default_p_rate ?? ms?.default_p_rate ?? 0, d: file.default_d_rate ?? ms?.default_d_rate ?? 0 },
      instances,
      ...(file.max_removed_fraction === undefined ? {} : { maxRemovedFraction: file.max_removed_fraction }),
    },
  };
}

/**
 * One line saying which timings apply and where their defaults come from, for the log at start.
 * @example timingLine(spec) // 'timings: pdlink\'s defaults (no ms_controller file): synchronization 0.2 s, ...'
 */
export function timingLine(spec: TopologySpec): string {
  const t = spec.timing;
  const from =
    spec.timingDefaults === 'mindie'
      ? "MindIE's defaults (the file reads an ms_controller.json)"
      : spec.timingDefaults === 'pdlink'
        ? "pdlink's defaults (the file reads no ms_controller.json)"
        : 'as given';
  const s = (ms: number): string => `${ms / 1000} s`;
  return (
    `timings: ${from}, the file's timing keys win: synchronization ${s(t.syncMs)}, heartbeat timeout ${s(t.heartbeatTimeoutMs)}, ` +
    `status poll ${s(t.statusPollMs)}, role retry ${s(t.roleRetryMs)}, HTTP timeout ${s(t.httpTimeoutMs)}, drain timeout ${s(t.drainTimeoutMs)}`
  );
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
