/**
 * The controller's vocabulary: one desired instance (what the topology says), the timings of the
 * loop, and the cluster spec a topology file or the API resolves to. camelCase inside; the wire
 * names stay in src/schema/.
 */
import type { Role } from '../schema/role.ts';
import type { PlannerSettings } from './planner/settings.ts';

export interface DesiredDevice {
  /** Logical id as the role API carries it (integer text). */
  readonly logicalId: string;
  readonly ip: string;
}

/** Static info the Coordinator needs when the engine does not report it. */
export interface StaticDefaults {
  readonly maxSeqLen: number;
  readonly maxOutputLen: number;
  readonly totalSlots: number;
  readonly totalBlocks: number;
  readonly blockSize: number;
}

export interface DesiredInstance {
  readonly id: number;
  /** Without a trailing slash: paths are appended to it. */
  readonly manageUrl: string;
  readonly inferenceUrl: string;
  readonly modelName: string;
  readonly serverIp: string;
  readonly devices: readonly DesiredDevice[];
  /** undefined: assigned by the P:D rates. */
  readonly role: Role | undefined;
  readonly staticInfo: StaticDefaults;
  /** The engine's KV-event endpoints, passed on in the refresh (kv_events_*); undefined when it publishes none. */
  readonly kvEvents?: KvEventsEndpoints;
}

/** Where an engine publishes its KV events, as the refresh names them. */
export interface KvEventsEndpoints {
  readonly endpoint: string;
  readonly replayEndpoint: string | undefined;
  readonly dpSize: number | undefined;
}

export interface ControllerTiming {
  /** Full snapshot to every Coordinator this often (MindIE: cluster_synchronization_seconds, 1 s). */
  readonly syncMs: number;
  /** A refused or failed role post is sent again after this long (MindIE: 5 s). */
  readonly roleRetryMs: number;
  /** An agent silent this long is dead (PyMotor: instance_heartbeat_timeout, 5 s). */
  readonly heartbeatTimeoutMs: number;
  /** Agents' status and Coordinators' readiness are polled this often. */
  readonly statusPollMs: number;
  /** Deadline of one outgoing call. */
  readonly httpTimeoutMs: number;
  /** A planned removal waits at most this long for the instance's requests to finish. */
  readonly drainTimeoutMs: number;
}

/** MindIE's timings: what a topology file that reads an `ms_controller.json` starts from. */
export const MINDIE_TIMING: ControllerTiming = {
  syncMs: 1000,
  roleRetryMs: 5000,
  heartbeatTimeoutMs: 5000,
  statusPollMs: 250,
  httpTimeoutMs: 5000,
  drainTimeoutMs: 30_000,
};

/**
 * pdlink's own timings, for a topology file without `ms_controller`: a dead instance leaves the
 * snapshot about 1 s after it died (1 s heartbeat, read by 0.1 s polls, pushed within 0.2 s)
 * instead of MindIE's 5 to 6 s.
 */
export const PDLINK_TIMING: ControllerTiming = { ...MINDIE_TIMING, syncMs: 200, heartbeatTimeoutMs: 1000, statusPollMs: 100 };

/** MindIE's timings, which the loop's own tests run on. */
export const DEFAULT_TIMING: ControllerTiming = MINDIE_TIMING;

/** Which defaults a spec's timings start from: pdlink's own, or MindIE's (an `ms_controller.json` is read). */
export type TimingDefaults = 'pdlink' | 'mindie';

/** MindIE's P:D rates (0..15 each); both 0 means one P per D. */
export interface PdRates {
  readonly p: number;
  readonly d: number;
}

/** Largest share of the instances one change may remove unless forced. */
export const DEFAULT_MAX_REMOVED_FRACTION = 0.5;

/** The topology file resolved: the Coordinators, the timing, the P:D rates and the desired instances. */
export interface TopologySpec {
  readonly coordinators: readonly string[];
  readonly timing: ControllerTiming;
  /** Where the timings the file leaves out come from (absent: the spec was not read from a file). */
  readonly timingDefaults?: TimingDefaults;
  readonly rates: PdRates;
  readonly instances: readonly DesiredInstance[];
  /** Largest share of the instances one change may remove unless forced (default 0.5). */
  readonly maxRemovedFraction?: number;
  /** The P:D planner's settings (absent: planner/settings.ts's defaults, the planner off). */
  readonly planner?: PlannerSettings;
}
