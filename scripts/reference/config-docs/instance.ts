/**
 * What each key of the instance config means: MindIE's `ServerConfig` listener keys as the agent
 * (`pdlink instance`) and the engine simulator (`pdlink sim-engine`) read them, and pdlink's own
 * `pdlink` section (devices, link ports, the worker pools, secrets, TLS, caps). Defaults come from
 * src/config/instance.ts, the pools' and transfers' constants and the native runtime's header.
 */
import { DEFAULT_CHUNK_BYTES, DEFAULT_PARALLEL_SLICES, DEFAULT_SLICE_MS } from '../../../src/agent/transfers/transfers.ts';
import { SAME_HOST_FASTPATH_ENV } from '../../../src/agent/transfers/setup.ts';
import { DEFAULT_INFERENCE_PORT } from '../../../src/cli/sim-engine.ts';
import {
  DEFAULT_MANAGE_IP,
  DEFAULT_MANAGE_PORT,
  DEFAULT_SERVER_IP,
  LINK_SECRET_ENV,
  MANAGEMENT_IP_ENV,
} from '../../../src/config/instance.ts';
import { SECRET_MAX, SECRET_MIN } from '../../../src/core/limits.ts';
import { MANAGEMENT_TOKEN_ENV } from '../../../src/core/secret-env.ts';
import { DEFAULT_MAX_CONNECTIONS } from '../../../src/http/connection-cap.ts';
import { DEFAULT_BATCH_WINDOW_MS, MAX_CLUSTERS_PER_CALL } from '../../../src/links/call-rules.ts';
import { DEFAULT_LINK_BASE_PORT } from '../../../src/schema/instance-config.ts';
import { DEFAULT_ENCODING } from '../../../src/workers/pool-executor.ts';
import { nativeDefault, tlsKeys, type KeyDocs } from './shared.ts';

const MIB = 1024 * 1024;
const CLUSTER_ID =
  'instead of the one computed from its link address (IPv4: the address as a 32-bit number × 65536 + port; IPv6: a 63-bit hash); for direct `/v1/links` use, since a device with its own id cannot take role posts (422)';
const THREADS = 'as many as the cores, between 2 and 4';

const server: KeyDocs = {
  ServerConfig: { doc: "MindIE's listener settings of the engine; pdlink reads these five keys." },
  'ServerConfig.ipAddress': {
    doc: "The engine's address: `pdlink sim-engine`'s inference listener, device 0's link address when `pdlink.devices` is absent, and the management address when `managementIpAddress` is absent.",
    default: JSON.stringify(DEFAULT_SERVER_IP),
  },
  'ServerConfig.managementIpAddress': {
    doc: `Address of the management listener (role API, status, links, KV caches, probes, \`/metrics\`). \`--manage_ip\`, then env \`${MANAGEMENT_IP_ENV}\`, win over it.`,
    default: `\`ipAddress\`, else ${JSON.stringify(DEFAULT_MANAGE_IP)}`,
  },
  'ServerConfig.port': {
    doc: "`pdlink sim-engine`'s inference port (`--port` wins); also the management port when `managementPort` is absent, so set both when both listen.",
    default: String(DEFAULT_INFERENCE_PORT),
  },
  'ServerConfig.managementPort': {
    doc: 'Port of the management listener; `--manage_port` wins (and may be 0, any free port).',
    default: `\`port\`, else ${DEFAULT_MANAGE_PORT}`,
  },
  'ServerConfig.allowAllZeroIpListening': {
    doc: 'true lets the management, inference and device link addresses be an all-interfaces address (`0.0.0.0`, `::`, any spelling); otherwise one stops the start with exit status 2.',
    default: 'false',
  },
};

const devices: KeyDocs = {
  pdlink: { doc: "pdlink's own settings of the agent: its devices and their link ports, the worker pools, secrets, TLS and caps." },
  'pdlink.cluster_id': { doc: `Only with exactly one device: that device's LLM-DataDist cluster id ${CLUSTER_ID}.` },
  'pdlink.devices': {
    doc: "The local devices, one device-runtime context each; a role post's `local.device` must name them.",
    default: `one device, logical id 0, on \`ServerConfig.ipAddress\``,
  },
  'pdlink.devices[].device_logical_id': {
    doc: 'The logical id d (a number or a decimal string): the device listens for links on `device_ip:(link_base_port + d)`, which must stay ≤ 65535. No two devices share one.',
  },
  'pdlink.devices[].device_ip': {
    doc: "The address the device's link port listens on and its links leave from; the Controller's role posts name it.",
  },
  'pdlink.devices[].cluster_id': { doc: `This device's cluster id ${CLUSTER_ID}. No two devices share one.` },
  'pdlink.link_base_port': {
    doc: "Device d listens on `link_base_port + d`. Peers derive each other's link ports from it, so every agent of a deployment uses the same.",
    default: String(DEFAULT_LINK_BASE_PORT),
  },
};

const transfers: KeyDocs = {
  'pdlink.transfers': {
    doc: `KV block transfers: a worker pool of their own (a bulk copy never delays a link call); each transfer gives its worker back every ${DEFAULT_SLICE_MS} ms, so an abort stops it within one chunk.`,
  },
  'pdlink.transfers.threads': { doc: 'Worker threads of the transfer pool, apart from `pool.threads`.', default: THREADS },
  'pdlink.transfers.same_host_fastpath': {
    doc: `true: links between devices on one host carry transfers through shared memory (negotiated in the handshake); false: always TCP. Absent, env \`${SAME_HOST_FASTPATH_ENV}\` = 0, false or off also forces TCP. Applies to links made afterwards.`,
    default: 'true',
  },
  'pdlink.transfers.chunk_mib': { doc: 'What one runtime call of a transfer moves, in MiB.', default: String(DEFAULT_CHUNK_BYTES / MIB) },
  'pdlink.transfers.parallel_slices': {
    doc: 'Slices of one transfer running at once on different transfer workers.',
    default: String(DEFAULT_PARALLEL_SLICES),
  },
};

const security: KeyDocs = {
  'pdlink.auth': { doc: 'Secrets, each read from a file so it is never on a command line nor in a log.' },
  'pdlink.auth.link_secret_file': {
    doc: `The cluster secret (${SECRET_MIN} to ${SECRET_MAX} bytes; trailing whitespace is not part of it): every link is then a mutual HMAC challenge-response, and a peer without the same secret gets \`LLM_LINK_FAILED\`. Every instance of a cluster needs the same. Env \`${LINK_SECRET_ENV}\` wins; a missing, empty or short file stops the start.`,
    default: 'none: anyone reaching a link port can link',
  },
  'pdlink.auth.management_token_file': {
    doc: `A file holding one token on one line: every management route (the simulator's \`/sim/*\` too) then needs \`Authorization: Bearer <token>\` (401 otherwise; probes exempt). Env \`${MANAGEMENT_TOKEN_ENV}\` wins.`,
    default: 'none: the listener is open',
  },
  'pdlink.tls': { doc: "TLS of the agent's listeners and of its calls to other instances, with MindIE's item set. Read at start." },
  ...tlsKeys('pdlink.tls.management', 'server', 'the management listener'),
  ...tlsKeys('pdlink.tls.inference', 'server', "`pdlink sim-engine`'s inference listener", '`pdlink instance` has no such listener.'),
  ...tlsKeys('pdlink.tls.client', 'client', "`pdlink sim-engine`'s calls to other instances' management listeners (KV release notices)"),
  'pdlink.allowed_instance_networks': {
    doc: 'CIDRs where peers may live: a link call to an address outside them answers `LLM_PARAM_INVALID` for that cluster without connecting, a role post naming one is refused with 422. Link-local, multicast and broadcast addresses are refused with or without a list.',
    default: 'any other address',
  },
  'pdlink.http': { doc: 'Caps of the management listener.' },
  'pdlink.http.max_connections': {
    doc: 'Requests the management listener serves at once; past it a new request is answered 503 with `Retry-After: 1`, while the probes always answer.',
    default: String(DEFAULT_MAX_CONNECTIONS),
  },
};

const linkPort: KeyDocs = {
  'pdlink.link_port': {
    doc: "Caps of every device's link port, so no peer can take it over. Unset keys take the runtime's defaults (those shown are the reference runtime's).",
  },
  'pdlink.link_port.handshake_timeout_ms': {
    doc: 'An incoming link handshake not finished within this many ms is dropped.',
    default: nativeDefault('DEFAULT_HANDSHAKE_MS'),
  },
  'pdlink.link_port.idle_timeout_ms': {
    doc: 'A served data connection idle this long is closed; the requester opens another when it needs one.',
    default: nativeDefault('DEFAULT_IDLE_MS'),
  },
  'pdlink.link_port.max_links': {
    doc: 'Links one device serves in total; one more is refused (`LLM_LINK_FAILED`).',
    default: nativeDefault('DEFAULT_MAX_LINKS'),
  },
  'pdlink.link_port.max_links_per_peer': {
    doc: 'Links one device serves from one peer address. Without a link secret an attacker with many addresses can still fill `max_links`.',
    default: nativeDefault('DEFAULT_MAX_LINKS_PER_PEER'),
  },
  'pdlink.link_port.max_handshakes': {
    doc: 'Incoming handshakes in progress on one device; past it the oldest gives way.',
    default: nativeDefault('DEFAULT_MAX_HANDSHAKES'),
  },
  'pdlink.link_port.max_handshakes_per_peer': {
    doc: 'Incoming handshakes in progress from one peer address; one more is refused.',
    default: nativeDefault('DEFAULT_MAX_HANDSHAKES_PER_PEER'),
  },
  'pdlink.link_port.max_conns_per_peer': {
    doc: 'Data connections one device serves to one peer address; one more is refused.',
    default: nativeDefault('DEFAULT_MAX_CONNS_PER_PEER'),
  },
  'pdlink.link_port.max_conns': {
    doc: 'Data connections one device serves in total; past it the one idle longest gives way.',
    default: nativeDefault('DEFAULT_MAX_CONNS'),
  },
};

const pool: KeyDocs = {
  'pdlink.pool': {
    doc: 'The threads that make device-runtime calls, so the event loop never waits on the network; defaults from `bench/pool.bench.ts`.',
  },
  'pdlink.pool.threads': {
    doc: 'Threads making link and unlink calls (and the other runtime calls); link calls that leave together while threads are idle are split evenly over them.',
    default: THREADS,
  },
  'pdlink.pool.batch_window_ms': {
    doc: 'While a runtime call is out, new link requests gather this long (or until it answers) into one call; with none out a batch leaves at the end of the event-loop turn. 0: no gathering.',
    default: String(DEFAULT_BATCH_WINDOW_MS),
  },
  'pdlink.pool.max_batch': {
    doc: `Clusters per runtime link or unlink call, up to LLM-DataDist's ${MAX_CLUSTERS_PER_CALL}.`,
    default: String(MAX_CLUSTERS_PER_CALL),
  },
  'pdlink.pool.encoding': {
    doc: 'How a batch of clusters crosses to the thread that runs it: structured clone, msgpack, or records in shared memory (within noise of each other for 16 clusters).',
    default: JSON.stringify(DEFAULT_ENCODING),
  },
  'pdlink.pool.link_threads': {
    doc: "`native`: link calls on the runtime's own call-queue threads when it has them, else worker threads; `workers`: always worker threads, the only path whose calls a killed thread ends.",
    default: '"native"',
  },
};

/** Every key of the instance config. */
export const instanceKeys: KeyDocs = { ...server, ...devices, ...transfers, ...security, ...linkPort, ...pool };
