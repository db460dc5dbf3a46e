/**
 * The controller's topology file (pdlink's own JSON): the Coordinators to keep informed, the
 * instances to run as a cluster, the timings and P:D rates, and optionally MindIE's inputs
 * (`ms_controller.json`, an Ascend global rank table) by path. The same instance entry is the body
 * of `POST /v1/cluster/instances`, so a file and the API cannot drift apart.
 */
import * as v from 'valibot';
import { UnsafeInteger } from '../core/exact-json.ts';
import { PdlinkSection } from './store-config.ts';
import { TlsItems } from './tls-items.ts';
import { HttpCaps, SecretFilePath } from './security.ts';
import { PlannerSection } from './planner-config.ts';

/** Most instances one controller manages: a snapshot's cap (MindIE's 4096). */
export const MAX_CLUSTER_INSTANCES = 4096;
/** Most Coordinators one controller keeps informed. */
export const MAX_COORDINATORS = 16;
/** Most devices per instance, as the role API allows. */
export const MAX_INSTANCE_DEVICES = 64;
/** The heartbeat timeout may go down to 1 s (below, a GC pause would count as a death). */
export const MIN_HEARTBEAT_SECONDS = 1;
/** MindIE's P:D rates are each 0..15 with a sum of at most 16 (one group). */
export const MAX_RATE = 15;
export const MAX_RATE_SUM = 16;

const Ip = v.pipe(v.string('must be a string'), v.ip('must be an IPv4 or IPv6 address'));
/** One check, so a bad URL is one issue. */
const Url = v.pipe(
  v.string('must be a string'),
  v.check((u) => /^https?:\/\//i.test(u) && URL.canParse(u), 'must be an http(s) URL'),
);
const Uint = (min: number, max: number) =>
  v.pipe(
    v.number('must be a number'),
    v.integer('must be an integer'),
    v.minValue(min, `must be >= ${min}`),
    v.maxValue(max, `must be <= ${max}`),
  );
const Seconds = (min: number, max: number) =>
  v.pipe(v.number('must be a number'), v.minValue(min, `must be >= ${min}`), v.maxValue(max, `must be <= ${max}`));

/** Largest instance id: a JSON number is exact up to 2^53-1. */
export const MAX_INSTANCE_ID = Number.MAX_SAFE_INTEGER;
const ID_TOO_LARGE = `must be at most 2^53-1 (${MAX_INSTANCE_ID}): larger ids cannot be carried exactly`;

/**
 * An instance id: an integer in [0, 2^53-1]. A larger literal reaches the schema as an exact-JSON
 * marker (the API) or a rounded number (a file); both are refused as too large.
 */
const InstanceId = v.pipe(
  v.custom<unknown>((x) => !(x instanceof UnsafeInteger), ID_TOO_LARGE),
  v.number('must be a number'),
  v.integer('must be an integer'),
  v.minValue(0, 'must be >= 0'),
  v.maxValue(MAX_INSTANCE_ID, ID_TOO_LARGE),
);

/** An instance's static info for engines that do not report their resources. */
export const StaticInfo = v.strictObject({
  max_seq_len: v.optional(Uint(2, 0xffffffff)),
  max_output_len: v.optional(Uint(1, 0xffffffff)),
  total_slots_num: v.optional(Uint(1, 5000)),
  total_block_num: v.optional(Uint(1, 0xffffffff)),
  block_size: v.optional(Uint(1, 128)),
});

const Device = v.strictObject({
  device_logical_id: v.pipe(v.string('must be an integer string'), v.regex(/^\d{1,9}$/, 'must be an integer string, e.g. "0"')),
  device_ip: Ip,
});

/** A ZeroMQ TCP endpoint, `tcp://HOST:PORT`. */
const KvEndpoint = v.pipe(
  v.string('must be a tcp://HOST:PORT endpoint'),
  v.maxLength(300, 'must be at most 300 characters'),
  v.regex(/^tcp:\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]]+):\d{1,5}$/, 'must be a tcp://HOST:PORT endpoint'),
);

/** One instance of the cluster: where its agent and engine listen, what it serves, its devices and role. */
export const InstanceEntry = v.strictObject({
  id: InstanceId,
  /** The agent's management listener (role API, status). */
  manage_url: Url,
  /** The engine's inference listener (what the Coordinator proxies to). */
  inference_url: Url,
  model_name: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
  server_ip: Ip,
  /** Omitted: taken from the rank table's server of the same server_ip. */
  devices: v.optional(
    v.pipe(
      v.array(Device, 'must be an array of devices'),
      v.minLength(1, 'must list at least one device'),
      v.maxLength(MAX_INSTANCE_DEVICES, `must list at most ${MAX_INSTANCE_DEVICES} devices`),
    ),
  ),
  /** Omitted or null: assigned by the P:D rates. */
  role: v.optional(v.nullable(v.picklist(['prefill', 'decode'], 'must be "prefill", "decode" or null'))),
  static_info: v.optional(StaticInfo),
  /** Where the engine publishes its KV events (vLLM's ZeroMQ PUB, data-parallel rank 0), passed on in the refresh. */
  kv_events_endpoint: v.optional(KvEndpoint),
  /** Its replay (ROUTER) endpoint. */
  kv_events_replay_endpoint: v.optional(KvEndpoint),
  /** Data-parallel ranks publishing on consecutive ports from the endpoints' (default 1). */
  kv_events_dp_size: v.optional(
    v.pipe(
      v.number('must be an integer'),
      v.integer('must be an integer'),
      v.minValue(1, 'must be in [1, 1024]'),
      v.maxValue(1024, 'must be in [1, 1024]'),
    ),
  ),
});
export type InstanceEntry = v.InferOutput<typeof InstanceEntry>;

/** Timings in seconds; each also has a MindIE name read from `ms_controller.json`. */
export const Timing = v.strictObject({
  cluster_synchronization_seconds: v.optional(Seconds(0.05, 3600)),
  role_retry_seconds: v.optional(Seconds(0.05, 3600)),
  instance_heartbeat_timeout_seconds: v.optional(Seconds(MIN_HEARTBEAT_SECONDS, 3600)),
  status_poll_seconds: v.optional(Seconds(0.05, 60)),
  http_timeout_seconds: v.optional(Seconds(0.1, 600)),
  drain_timeout_seconds: v.optional(Seconds(0, 3600)),
});
export type Timing = v.InferOutput<typeof Timing>;

const Rate = Uint(0, MAX_RATE);

export const TopologyFile = v.pipe(
  v.strictObject({
    coordinators: v.pipe(
      v.array(Url, 'must be an array of management URLs'),
      v.maxLength(MAX_COORDINATORS, `must list at most ${MAX_COORDINATORS} Coordinators`),
    ),
    timing: v.optional(Timing),
    default_p_rate: v.optional(Rate),
    default_d_rate: v.optional(Rate),
    /** Largest share of the instances one change of this file (or one API removal) may remove unless forced. */
    max_removed_fraction: v.optional(
      v.pipe(v.number('must be a number'), v.minValue(0, 'must be >= 0'), v.maxValue(1, 'must be <= 1 (1 turns the guard off)')),
    ),
    /** The P:D planner: moves instances between prefill and decode as the load changes (off by default). */
    planner: v.optional(PlannerSection),
    /** Path of MindIE's ms_controller.json (relative to this file): timings and rates. */
    ms_controller: v.optional(v.pipe(v.string('must be a path'), v.minLength(1, 'must not be empty'))),
    /** Path of an Ascend global rank table (relative to this file): devices by server_ip. */
    rank_table: v.optional(v.pipe(v.string('must be a path'), v.minLength(1, 'must not be empty'))),
    /**
     * TLS with MindIE's item set: `server_*` for the controller's own listener (with `ca_cert`, it
     * requires client certificates), `client_*` for its calls to agents and Coordinators (https,
     * verified with `ca_cert`, presenting `tls_cert`). Read at start; a reload keeps the first.
     */
    tls: v.optional(
      v.strictObject({
        server_tls_enable: v.optional(v.boolean('must be a boolean')),
        server_tls_items: v.optional(TlsItems),
        client_tls_enable: v.optional(v.boolean('must be a boolean')),
        client_tls_items: v.optional(TlsItems),
      }),
    ),
    /** Defaults of every instance's static_info. */
    static_info: v.optional(StaticInfo),
    /**
     * pdlink's own: the cluster name and the etcd shared by several controllers (absent: one
     * controller, state in memory); the management token this controller requires and sends (env
     * PDLINK_MANAGEMENT_TOKEN_FILE); its listener cap.
     */
    pdlink: v.optional(
      v.strictObject({
        ...PdlinkSection.entries,
        auth: v.optional(v.strictObject({ management_token_file: v.optional(SecretFilePath) })),
        http: v.optional(HttpCaps),
      }),
    ),
    instances: v.pipe(
      v.array(InstanceEntry, 'must be an array of instances'),
      v.maxLength(MAX_CLUSTER_INSTANCES, `must list at most ${MAX_CLUSTER_INSTANCES} instances`),
    ),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { default_p_rate: p = 0, default_d_rate: d = 0, instances } = dataset.value;
    if (p + d > MAX_RATE_SUM)
      addIssue({
        message: `default_p_rate + default_d_rate must be <= ${MAX_RATE_SUM}`,
        path: [pathItem(dataset.value, 'default_d_rate')],
      });
    const ids = new Map<number, number>();
    instances.forEach((instance, i) => {
      const at = (key: string): [v.IssuePathItem, ...v.IssuePathItem[]] => [
        pathItem(dataset.value, 'instances'),
        pathItem(instances, i),
        pathItem(instance, key),
      ];
      const first = ids.get(instance.id);
      if (first === undefined) ids.set(instance.id, i);
      else addIssue({ message: `duplicate id ${instance.id} (also instances[${first}])`, path: at('id') });
    });
    // Addresses and devices are compared once resolved (a rank table may give the devices): controller/conflicts.ts.
  }),
);
export type TopologyFile = v.InferOutput<typeof TopologyFile>;

/** MindIE's `ms_controller.json`: only the keys pdlink uses are read; others are ignored. */
export const MsControllerFile = v.looseObject({
  cluster_synchronization_seconds: v.optional(Seconds(0.05, 3600)),
  instance_heartbeat_timeout: v.optional(Seconds(MIN_HEARTBEAT_SECONDS, 3600)),
  role_retry_seconds: v.optional(Seconds(0.05, 3600)),
  http_timeout_seconds: v.optional(Seconds(0.1, 600)),
  default_p_rate: v.optional(Rate),
  default_d_rate: v.optional(Rate),
});
export type MsControllerFile = v.InferOutput<typeof MsControllerFile>;

/** The Ascend global rank table: servers and their devices. */
export const RankTableFile = v.looseObject({
  server_list: v.array(
    v.looseObject({
      server_id: v.optional(v.string('must be a string')),
      server_ip: Ip,
      device: v.array(
        v.looseObject({
          device_id: v.pipe(v.string('must be an integer string'), v.regex(/^\d{1,9}$/, 'must be an integer string')),
          device_ip: Ip,
          rank_id: v.optional(v.string('must be a string')),
        }),
        'must be an array of devices',
      ),
    }),
    'must be an array of servers',
  ),
  status: v.optional(v.string('must be a string')),
});
export type RankTableFile = v.InferOutput<typeof RankTableFile>;

function pathItem(input: unknown, key: string | number): v.IssuePathItem {
  const value = (input as Record<string | number, unknown>)[key];
  return typeof key === 'number'
    ? { type: 'array', origin: 'value', input: input as unknown[], key, value }
    : { type: 'object', origin: 'value', input: input as Record<string, unknown>, key, value };
}
