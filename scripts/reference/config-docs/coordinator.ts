/**
 * What each key of `ms_coordinator.json` outside its `pdlink` and `scheduler` sections means:
 * MindIE's own sections (listeners, limits, timeouts, master/standby, TLS) as pdlink reads them, and
 * pdlink's `proxy_config`. Defaults come from the constants src/config/coordinator.ts and
 * src/proxy/exchange/settings.ts resolve them with.
 */
import { COORDINATOR_DEFAULTS, MINDIE_ETCD_PORT } from '../../../src/config/coordinator.ts';
import { ETCD_ENDPOINTS_ENV } from '../../../src/config/store.ts';
import {
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
  DEFAULT_LEASE_MS,
  MINDIE_MAX_RETRY,
  MINDIE_TIMEOUT_SECONDS,
} from '../../../src/proxy/exchange/settings.ts';
import { BODY_LIMIT_MB, HTTP_TIMEOUT_SECONDS, MAX_REQUESTS, SINGLE_NODE_MAX_REQUESTS } from '../../../src/schema/coordinator-config.ts';
import { policyNames } from '../../../src/scheduler/index.ts';
import { tlsKeys, type KeyDocs } from './shared.ts';

const ALL_INTERFACES =
  'Listening on every interface (`0.0.0.0`, `::`, in any spelling) is refused unless `allow_all_zero_ip_listening` is true.';

const httpConfig: KeyDocs = {
  http_config: { doc: 'The two listeners: management (refresh, registry, probes, metrics) and inference (the OpenAI-compatible proxy).' },
  'http_config.predict_ip': {
    doc: `Address of the inference listener, where clients send \`/v1/completions\` and \`/v1/chat/completions\`; \`--predict_ip\` wins. ${ALL_INTERFACES}`,
    default: JSON.stringify(COORDINATOR_DEFAULTS.predictIp),
  },
  'http_config.predict_port': {
    doc: 'Port of the inference listener, a string (MindIE writes them so) or an integer; `--predict_port` wins (and may be 0, any free port).',
    default: JSON.stringify(String(COORDINATOR_DEFAULTS.predictPort)),
  },
  'http_config.manage_ip': {
    doc: `Address of the management listener, where the Controller posts refreshes and operators read probes, \`/metrics\` and \`/dashboard\`; \`--manage_ip\` wins. ${ALL_INTERFACES}`,
    default: JSON.stringify(COORDINATOR_DEFAULTS.manageIp),
  },
  'http_config.manage_port': {
    doc: 'Port of the management listener, a string or an integer; `--manage_port` wins (and may be 0, any free port).',
    default: JSON.stringify(String(COORDINATOR_DEFAULTS.managePort)),
  },
  'http_config.allow_all_zero_ip_listening': {
    doc: 'true lets `manage_ip` and `predict_ip` be an all-interfaces address; otherwise such an address stops the start with exit status 2.',
    default: 'false',
  },
  'http_config.http_timeout_seconds': {
    doc: 'A leg fails when its engine sends nothing for this long (no response head, or no next body chunk): a P leg is retried on another P, a D leg ends with 502 or an SSE error event. 0 = no bound. A stream that keeps producing is never cut, so keep it above the longest non-streamed generation.',
    default: String(HTTP_TIMEOUT_SECONDS.default),
  },
  'http_config.keep_alive_seconds': {
    doc: "Idle keep-alive client connections on both listeners are closed after this many seconds; 0 keeps them open. Bun's server allows at most 255 (a larger value is capped); Deno's server does not apply it.",
    default: '180',
  },
  'http_config.server_name': { doc: "MindIE's key, checked to be a string and otherwise not used by pdlink." },
  'http_config.user_agent': { doc: "MindIE's key, checked to be a string and otherwise not used by pdlink." },
};

const limits: KeyDocs = {
  request_limit: { doc: "Bounds on the Coordinator's requests and bodies." },
  'request_limit.single_node_max_requests': {
    doc: "Most of this Coordinator's requests one instance holds at once (P counts a request until it ends, since it holds its KV blocks); a request whose every candidate is full waits in the admission queue, or is answered 429 with admission off. Per Coordinator: with K active Coordinators, set the instance's cap divided by K.",
    default: String(SINGLE_NODE_MAX_REQUESTS.default),
  },
  'request_limit.max_requests': {
    doc: 'Most requests in flight through this Coordinator (body read to response ended); one more waits in the admission queue (`pdlink.admission`), or is answered 429 with admission off.',
    default: String(MAX_REQUESTS.default),
  },
  'request_limit.body_limit': {
    doc: "Largest request body in MB (MindIE's range) on both listeners, refreshes included (8 MB holds a snapshot of 4096 instances); a larger body is answered 413.",
    default: String(BODY_LIMIT_MB.default),
  },
};

const exceptions: KeyDocs = {
  exception_config: { doc: "MindIE's retry and timeout settings of the proxy, in seconds (0 = no bound)." },
  'exception_config.max_retry': {
    doc: 'Further attempts after an instance failed: a P that answered 5xx or could not be reached is replaced by another P after a backoff (`proxy_config`), a D that refused the leg or answered 5xx before its first byte by another D linked to the same P. 0 = none; a 4xx is never retried.',
    default: String(MINDIE_MAX_RETRY),
  },
  'exception_config.schedule_timeout': { doc: "MindIE's key, checked for its range and otherwise not used by pdlink." },
  'exception_config.first_token_timeout': {
    doc: "From the request's arrival to D's first byte (the whole answer when not streaming); past it the request ends with 504, charged to the instance it waited on. Also bounds each prefill attempt unless `proxy_config.prefill_timeout_ms` is set. 0 = no bound.",
    default: String(MINDIE_TIMEOUT_SECONDS),
  },
  'exception_config.infer_timeout': {
    doc: "From the request's arrival to the end of D's answer; past it the request ends with 504 (an SSE error event once streaming). 0 = no bound.",
    default: String(MINDIE_TIMEOUT_SECONDS),
  },
};

const digs: KeyDocs = {
  digs_scheduler_config: { doc: "MindIE's scheduler section; pdlink reads only `algorithm_type`." },
  'digs_scheduler_config.deploy_mode': { doc: "MindIE's key, checked to be a string and otherwise not used by pdlink." },
  'digs_scheduler_config.scheduler_type': { doc: "MindIE's key, checked to be a string and otherwise not used by pdlink." },
  'digs_scheduler_config.algorithm_type': {
    doc: `A policy name for prefill (built in: ${policyNames('prefill')
      .map((name) => `\`${name}\``)
      .join(', ')}) is taken as the prefill policy when \`scheduler.policy.prefill\` is absent; any other value is ignored.`,
  },
};

const proxyConfig: KeyDocs = {
  proxy_config: { doc: "pdlink's own timing of the proxy's legs, in milliseconds." },
  'proxy_config.prefill_timeout_ms': {
    doc: 'Bound on one prefill attempt, from sending the P leg to its complete answer; past it the request ends with 504, charged to that P. 0 or absent: bounded by `first_token_timeout` alone.',
    default: '0',
  },
  'proxy_config.backoff_base_ms': {
    doc: 'Backoff before retry n: a uniformly random wait in [0, min(`backoff_cap_ms`, `backoff_base_ms` × 2^(n−1))] ms.',
    default: String(DEFAULT_BACKOFF_BASE_MS),
  },
  'proxy_config.backoff_cap_ms': { doc: 'The longest backoff before a retry.', default: String(DEFAULT_BACKOFF_CAP_MS) },
  'proxy_config.lease_ms': {
    doc: "Lease of a request's KV reservation in the ledger, renewed while the request runs; a reservation nobody renews any more is released when it lapses.",
    default: String(DEFAULT_LEASE_MS),
  },
};

const backup: KeyDocs = {
  backup_config: {
    doc: "MindIE's master/standby: one Coordinator holds the master lock in etcd, the others answer readiness 503 `not master` and take over when it lapses.",
  },
  'backup_config.function_enable': {
    doc: 'true runs master/standby; it needs an etcd (`pdlink.store.etcd.endpoints`, env, or `database_server_dns`), else the start stops. false with an etcd configured: active/active, every Coordinator serves.',
    default: 'false',
  },
  'backup_config.database_server_dns': {
    doc: `Host of the etcd, used only with \`function_enable\` true and when neither \`pdlink.store.etcd.endpoints\` nor env \`${ETCD_ENDPOINTS_ENV}\` names one.`,
  },
  'backup_config.database_server_port': {
    doc: 'The etcd client port with `database_server_dns`, a string or an integer.',
    default: JSON.stringify(String(MINDIE_ETCD_PORT)),
  },
};

const MINDIE_TLS = 'MindIE turns TLS on by default with certificates it ships; pdlink only when the file asks.';

const tls: KeyDocs = {
  tls_config: {
    doc: "TLS of the Coordinator's listeners and of its legs to the engines, with MindIE's item set. Read at start; replace certificates by restarting.",
  },
  ...tlsKeys('tls_config.controller_server', 'server', 'the management listener', MINDIE_TLS),
  ...tlsKeys('tls_config.request_server', 'server', 'the inference listener', MINDIE_TLS),
  ...tlsKeys(
    'tls_config.mindie_client',
    'client',
    'the legs to P and D',
    "An engine's certificate must name the `ip` its refresh gives. https legs go over the runtime's fetch.",
  ),
};

/** Every key of `ms_coordinator.json` outside its `pdlink` and `scheduler` sections. */
export const coordinatorKeys: KeyDocs = {
  ...httpConfig,
  ...limits,
  ...exceptions,
  ...digs,
  ...proxyConfig,
  ...backup,
  ...tls,
};
