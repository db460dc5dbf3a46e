/**
 * What each key of the controller's topology file means: the Coordinators, the loop's timings (whose
 * defaults depend on whether the file reads MindIE's `ms_controller.json`), the P:D rates, the
 * mass-removal guard, the P:D planner, MindIE's inputs, TLS, the shared `pdlink` section and the
 * instances. Defaults come from src/controller/types.ts, src/controller/spec.ts and
 * src/controller/planner/settings.ts.
 */
import { DEFAULT_STATIC } from '../../../src/controller/spec.ts';
import { DEFAULT_MAX_REMOVED_FRACTION, MINDIE_TIMING, PDLINK_TIMING, type ControllerTiming } from '../../../src/controller/types.ts';
import { MANAGEMENT_TOKEN_ENV } from '../../../src/core/secret-env.ts';
import { PLANNER_DEFAULTS } from '../../../src/controller/planner/settings.ts';
import { sharedPdlinkKeys, tlsKeys, type KeyDocs } from './shared.ts';

/** A timing's default: pdlink's own, and MindIE's when the file names an `ms_controller`. */
function timing(key: keyof ControllerTiming): string {
  const own = PDLINK_TIMING[key] / 1000;
  const mindie = MINDIE_TIMING[key] / 1000;
  return own === mindie ? String(own) : `${own} (${mindie} with \`ms_controller\`)`;
}

const FROM_MS = (name: string): string => ` Read from \`ms_controller.json\`'s \`${name}\` when this file leaves it out.`;

const top: KeyDocs = {
  coordinators: {
    doc: 'Management URLs of the Coordinators (https with `tls.client_*`); each gets every snapshot (`POST /v1/instances/refresh`), standbys too. A change applies when the file is re-read.',
  },
  timing: {
    doc: "The loop's timings in seconds. Without `ms_controller` pdlink's defaults make a dead instance leave the snapshot in about a second; with it MindIE's apply. Read at start only; the log at start and `GET /v1/cluster` say which apply.",
  },
  'timing.cluster_synchronization_seconds': {
    doc: `Full snapshot to every Coordinator this often (and at once when the topology changes).${FROM_MS('cluster_synchronization_seconds')}`,
    default: timing('syncMs'),
  },
  'timing.role_retry_seconds': {
    doc: `A refused or failed role post is sent again after this long.${FROM_MS('role_retry_seconds')}`,
    default: timing('roleRetryMs'),
  },
  'timing.instance_heartbeat_timeout_seconds': {
    doc: `An agent silent this long is dead: it leaves the snapshot and its peers get role posts without it. Below 1 s a GC pause would count as a death.${FROM_MS('instance_heartbeat_timeout')}`,
    default: timing('heartbeatTimeoutMs'),
  },
  'timing.status_poll_seconds': {
    doc: "Each agent's status and each Coordinator's readiness is polled this often: one HTTP call per agent, so raise it at thousands of instances.",
    default: timing('statusPollMs'),
  },
  'timing.http_timeout_seconds': {
    doc: `Deadline of one outgoing call (role post, status poll, snapshot).${FROM_MS('http_timeout_seconds')}`,
    default: timing('httpTimeoutMs'),
  },
  'timing.drain_timeout_seconds': {
    doc: "A planned removal waits at most this long for the instance's requests and KV blocks to be gone before it unlinks it (the whole time when its agent reports no `resource` block).",
    default: timing('drainTimeoutMs'),
  },
  default_p_rate: {
    doc: "MindIE's P:D rate: instances without a `role` take roles (in id order) so that P keeps to p/(p+d) of the cluster; both 0 means one P per D; the sum is at most 16. From `ms_controller.json` when this file leaves it out.",
    default: '0',
  },
  default_d_rate: { doc: 'The D side of the P:D rate (see `default_p_rate`).', default: '0' },
  max_removed_fraction: {
    doc: 'Largest share of the instances (those not already draining) one change of this file, or one `DELETE /v1/cluster/instances/{id}`, may remove; a larger change is refused whole (409 for the API) unless forced with `?force=true`. 1 turns the guard off.',
    default: String(DEFAULT_MAX_REMOVED_FRACTION),
  },
  ms_controller: {
    doc: "Path (relative to this file) of MindIE's `ms_controller.json`: its synchronization, heartbeat, role retry and HTTP timings and P:D rates fill what this file leaves out, and MindIE's timing defaults apply.",
    default: "none: pdlink's timing defaults",
  },
  rank_table: {
    doc: 'Path (relative to this file) of an Ascend global rank table: an instance without `devices` takes the devices (`device_id`, `device_ip`) of the server with its `server_ip`, and so may one added through the API.',
  },
  tls: { doc: "TLS of the controller's listener and of its calls, with MindIE's item set. Read at start; a reload keeps the first." },
  ...tlsKeys('tls.server', 'server', "the controller's listener"),
  ...tlsKeys(
    'tls.client',
    'client',
    'the role posts and status polls to agents and the snapshots to Coordinators',
    'List them with https URLs.',
  ),
};

/** `static_info` keys, with the built-in default each falls back to (after `fallback`, when given). */
function staticInfo(prefix: string, fallback?: string): KeyDocs {
  const d = DEFAULT_STATIC;
  const or = (value: string): string => (fallback === undefined ? value : `${fallback}, else ${value}`);
  return {
    [`${prefix}.max_seq_len`]: { doc: 'Longest sequence, prompt and output, in tokens.', default: or(String(d.maxSeqLen)) },
    [`${prefix}.max_output_len`]: {
      doc: 'Longest output in tokens; at most `max_seq_len` − 1.',
      default: or(`${d.maxOutputLen} (at most \`max_seq_len\` − 1)`),
    },
    [`${prefix}.total_slots_num`]: { doc: 'Requests the engine runs at once.', default: or(String(d.totalSlots)) },
    [`${prefix}.total_block_num`]: { doc: "The engine's KV blocks.", default: or(String(d.totalBlocks)) },
    [`${prefix}.block_size`]: {
      doc: "Tokens per KV block; the Coordinator counts a prompt's blocks with it, so give the engine's own.",
      default: or(String(d.blockSize)),
    },
  };
}

const statics: KeyDocs = {
  static_info: {
    doc: "Defaults of every instance's `static_info`: what the snapshot tells the Coordinators of each engine. `max_seq_len`, `max_output_len` and `block_size` always; the slot and block totals (and, as free counts, all of them) only while its agent reports no `resource` block.",
  },
  ...staticInfo('static_info'),
};

const pdlink: KeyDocs = {
  ...sharedPdlinkKeys('the controller', 'leader key (one controller leads, the others stand by)'),
  'pdlink.auth.management_token_file': {
    doc: `A file holding one token on one line: the controller's listener requires \`Authorization: Bearer <token>\` (probes exempt), and the controller sends it on its role posts, status polls and snapshots, so the cluster shares one token. Env \`${MANAGEMENT_TOKEN_ENV}\` wins.`,
    default: 'none: the listener is open',
  },
  'pdlink.proxy': { doc: 'Accepted because the section is shared with `ms_coordinator.json`; the controller does not read it.' },
  'pdlink.proxy.protocol': { doc: 'Not read by the controller (a Coordinator key).' },
  'pdlink.proxy.bootstrap_port': { doc: 'Not read by the controller (a Coordinator key).' },
  'pdlink.proxy.engine_client': { doc: 'Not read by the controller (a Coordinator key).' },
  'pdlink.proxy.max_answer_bytes': { doc: 'Not read by the controller (a Coordinator key).' },
  'pdlink.proxy.max_idle_connections': { doc: 'Not read by the controller (a Coordinator key).' },
};

const instances: KeyDocs = {
  instances: {
    doc: 'The instances to run as a cluster. The file is watched: a change applies as a diff (new ids added, missing ids drained away, changed ones posted again); a broken file is reported and ignored.',
  },
  'instances[].id': { doc: "The instance's id in the Coordinators' snapshots; unique." },
  'instances[].manage_url': { doc: "The agent's management listener (role API, status); no two instances share one." },
  'instances[].inference_url': {
    doc: "The engine's inference listener, which the Coordinators proxy to (the snapshot's `ip` and `port`); no two instances share one.",
  },
  'instances[].model_name': { doc: 'The model the engine serves, as clients name it.' },
  'instances[].server_ip': {
    doc: "The node's address in role bodies; no two instances share one (agents name peers by it), however it is spelt.",
  },
  'instances[].devices': {
    doc: "The role body's devices, paired by position with each peer's, so every instance of the cluster lists as many; no device (address and logical id) twice.",
    default: "the rank table's server with this `server_ip`",
  },
  'instances[].devices[].device_logical_id': { doc: 'The logical id, an integer string such as "0".' },
  'instances[].devices[].device_ip': { doc: "The device's link address." },
  'instances[].role': {
    doc: '`prefill` or `decode`; omitted or null, a role is given by the P:D rates and then kept.',
    default: 'by the rates',
  },
  'instances[].kv_events_endpoint': {
    doc: "Where the engine publishes its KV events (vLLM's ZeroMQ PUB, data-parallel rank 0), passed on in the refresh: the Coordinators subscribe to it for `precise_prefix`. An endpoint they cannot use is shown on their /dashboard, and the instance is scored as one without events.",
    default: 'none: no events',
  },
  'instances[].kv_events_replay_endpoint': {
    doc: "The engine's replay (ROUTER) endpoint, which a Coordinator asks for the events a sequence gap missed; without it a gap resets the instance's entries.",
    default: 'none',
  },
  'instances[].kv_events_dp_size': {
    doc: "Data-parallel ranks publishing, rank r on the endpoints' ports + r (vLLM's rule); the last port must stay ≤ 65535.",
    default: '1',
  },
  'instances[].static_info': { doc: "This instance's static info, key by key over the file's `static_info`." },
  ...staticInfo('instances[].static_info', "the file's `static_info`"),
};

const P = PLANNER_DEFAULTS;
const planner: KeyDocs = {
  planner: {
    doc: 'The P:D planner: moves instances between prefill and decode, one at a time, as the load changes. A move drains the instance (out of the snapshot, its requests finish), posts its new role and peers, and puts it back once RoleReady. It moves only instances whose `role` this file leaves open, never one an operator pinned (`POST /v1/cluster/instances/{id}/role`). Re-read with every reload.',
  },
  'planner.mode': {
    doc: "`off`; `load`: a stage whose instances are saturated (see `planner.load`) takes an instance from the other stage if that one keeps `margin` of headroom; `sla`: the split follows the request mix the Coordinators report, against what one instance of each role serves at `planner.sla`'s targets.",
    default: P.mode,
  },
  'planner.interval_seconds': {
    doc: 'A decision for every group this often; the signals are sampled every second (or this often, if shorter).',
    default: String(P.intervalMs / 1000),
  },
  'planner.window_seconds': {
    doc: 'Decisions read the mean of the signals over this long; the window starts again when the group changes (a move, a death, a scale-out), so no decision is made on less.',
    default: String(P.windowMs / 1000),
  },
  'planner.cooldown_seconds': { doc: 'No move in a group this long after its last move ended.', default: String(P.cooldownMs / 1000) },
  'planner.margin': {
    doc: 'Load mode: the stage giving an instance must stay at or below 1 − margin of saturation after giving it. SLA mode: act when a stage is within the margin of its capacity, and only for a move that lowers the busier stage by this share. Either way the move back must clear the same bar, so a load near a threshold does not flap.',
    default: String(P.margin),
  },
  'planner.min_prefill_per_group': {
    doc: 'Prefill instances a group always keeps (also for moves an operator asks for).',
    default: String(P.minPrefillPerGroup),
  },
  'planner.min_decode_per_group': {
    doc: 'Decode instances a group always keeps (also for moves an operator asks for).',
    default: String(P.minDecodePerGroup),
  },
  'planner.move_timeout_seconds': {
    doc: 'A move not done by then is given up: still draining, the instance keeps its old role; already switched, it keeps the new one and joins when ready.',
    default: String(P.moveTimeoutMs / 1000),
  },
  'planner.load': {
    doc: "Load mode's saturation points, read from each agent's status (its legs in flight, its slots and KV blocks in use).",
  },
  'planner.load.prefill_in_flight': {
    doc: 'Prefill legs in flight (queued or running) on one prefill instance at which it counts as saturated.',
    default: String(P.load.prefillInFlight),
  },
  'planner.load.decode_in_flight': {
    doc: 'Decode legs in flight on one decode instance at which it counts as saturated: the batch at which its TPOT reaches what you accept.',
    default: 'none: only `usage` counts',
  },
  'planner.load.usage': {
    doc: "Share of an instance's slots or KV blocks in use at which it counts as saturated.",
    default: String(P.load.usage),
  },
  'planner.sla': { doc: 'SLA mode: the targets and the profile they are read against. Required when `mode` is `sla`.' },
  'planner.sla.ttft_ms': { doc: 'The TTFT target (p90): one prefill instance serves the prompt-token rate at which the profile shows it.' },
  'planner.sla.tpot_ms': { doc: 'The TPOT target (p90): one decode instance serves the output-token rate at which the profile shows it.' },
  'planner.sla.profile': {
    doc: 'Path (relative to this file) of the profile of one prefill and one decode instance that `pdlink bench --profile` measured (JSON, `pdlink-pd-profile` version 1). Read with the file.',
  },
};

/** Every key of the controller's topology file. */
export const topologyKeys: KeyDocs = { ...top, ...planner, ...statics, ...pdlink, ...instances };
