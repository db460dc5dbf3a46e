/**
 * What each key of the `pdlink` section of `ms_coordinator.json` means: the shared part (cluster,
 * etcd, token, caps), the proxy's engine protocol and bounds, the inference listener's keys and
 * rate limit, tracing, and admission (priority classes, tenants, the queue, saturation per stage).
 * Defaults come from the constants the proxy, tracing and admission settings resolve them with.
 */
import {
  DEFAULT_CLASS_HEADER,
  DEFAULT_QUEUE_TIMEOUT_MS,
  DEFAULT_TENANT_HEADER,
  FALLBACK_QUEUE_TIMEOUT_MS,
} from '../../../src/admission/settings.ts';
import { DEFAULT_SERVICE_NAME, OTLP_ENDPOINT_ENV } from '../../../src/config/tracing.ts';
import { API_KEYS_ENV } from '../../../src/core/secret-env.ts';
import { IDLE_CAP_CEILING } from '../../../src/platform/fd-limit.ts';
import { ADMISSION_LIMITS, DEFAULT_CLASS_NAMES } from '../../../src/schema/admission-config.ts';
import { MAX_ANSWER_BYTES, SGLANG_DEFAULT_BOOTSTRAP_PORT } from '../../../src/schema/proxy-protocol.ts';
import { sharedPdlinkKeys, type KeyDocs } from './shared.ts';

const proxy: KeyDocs = {
  'pdlink.proxy': { doc: 'The PD protocol the engines behind this Coordinator speak, the client its legs go over, and their bounds.' },
  'pdlink.proxy.protocol': {
    doc: "`vllm`: the P leg, then the D leg carrying P's `kv_transfer_params`. `sglang`: both legs at once, with `bootstrap_host`, `bootstrap_port` and `bootstrap_room` added as SGLang's router adds them.",
    default: '"vllm"',
  },
  'pdlink.proxy.bootstrap_port': {
    doc: "With `sglang`, P's bootstrap port when P's refresh entry carries no `bootstrap_port` of its own (SGLang's `--disaggregation-bootstrap-port`).",
    default: String(SGLANG_DEFAULT_BOOTSTRAP_PORT),
  },
  'pdlink.proxy.engine_client': {
    doc: "What plain-http legs go over on Bun: `sockets`, pdlink's own HTTP/1.1 client on Bun's sockets, or `fetch`. https legs, and every leg on Deno, use fetch.",
    default: '"sockets"',
  },
  'pdlink.proxy.max_answer_bytes': {
    doc: "The largest answer read whole (P's, a non-streamed D's, an error body), in bytes: past it the leg fails, charged to the engine, and its connection is closed; a P leg is tried on another P, otherwise that request alone fails with 502.",
    default: String(MAX_ANSWER_BYTES.default),
  },
  'pdlink.proxy.max_idle_connections': {
    doc: 'Idle keep-alive connections to engines the socket client keeps, over all engines: past it the oldest idle one is closed, so idle sockets cannot take the descriptors the listeners need; 0 keeps none.',
    default: `a quarter of the descriptor limit (\`ulimit -n\`), at most ${IDLE_CAP_CEILING}`,
  },
  'pdlink.proxy.forward_authorization': {
    doc: "true passes the client's `Authorization` header on to the engines. With API keys on, the client's key is for pdlink alone.",
    default: 'true without `api_keys_file`, false with it',
  },
};

const security: KeyDocs = {
  'pdlink.auth.api_keys_file': {
    doc: `A file of inference API keys, one a line (\`KEY\`, or \`TENANT KEY\` naming the tenant admission counts it against; blank lines and \`#\` comments skipped): \`/v1/completions\`, \`/v1/chat/completions\` and \`/v1/models\` then need \`Authorization: Bearer <key>\` (401 in OpenAI's shape otherwise). Env \`${API_KEYS_ENV}\` wins; a file without a key stops the start.`,
    default: 'none: the inference listener is open',
  },
  'pdlink.allowed_instance_networks': {
    doc: "CIDRs where instances may live: a refresh naming an instance outside them is refused with 400 naming the field, and nothing changes. Link-local, multicast and broadcast addresses, and the Coordinator's own listeners, are refused with or without a list.",
    default: 'any other address',
  },
  'pdlink.tracing': {
    doc: "OpenTelemetry traces of the proxy's requests, exported over OTLP/HTTP (JSON); off unless an endpoint is named.",
  },
  'pdlink.tracing.otlp_endpoint': {
    doc: `The collector's OTLP/HTTP base URL; spans are posted to its \`/v1/traces\` in batches. Env \`${OTLP_ENDPOINT_ENV}\` when the file names none.`,
    default: 'none: tracing off',
  },
  'pdlink.tracing.service_name': { doc: 'The `service.name` of the spans.', default: JSON.stringify(DEFAULT_SERVICE_NAME) },
  'pdlink.rate_limit': {
    doc: 'A token bucket per client on the inference listener: a client is its API key when keys are on, else its address. An empty bucket answers 429 with `Retry-After`.',
    default: 'none (off)',
  },
  'pdlink.rate_limit.requests_per_second': { doc: "Tokens added to each client's bucket per second; each request takes one." },
  'pdlink.rate_limit.burst': {
    doc: 'Size of the bucket: requests a quiet client may send at once.',
    default: '`requests_per_second` rounded up (at least 1)',
  },
};

const limits = ADMISSION_LIMITS;
const defaultClasses = JSON.stringify(DEFAULT_CLASS_NAMES.map((name) => ({ name, queue_timeout_ms: DEFAULT_QUEUE_TIMEOUT_MS[name] })));
const classTimeouts = DEFAULT_CLASS_NAMES.map((name) => `${name} ${DEFAULT_QUEUE_TIMEOUT_MS[name]}`).join(', ');

const admission: KeyDocs = {
  'pdlink.admission': {
    doc: "Who a request is (tenant, priority class) and what happens when the cluster has no room for it: it waits in its class's queue, higher classes first and tenants within a class by weight, instead of being refused at once.",
  },
  'pdlink.admission.enabled': {
    doc: 'false: no queue and no stage limits; a request past `request_limit` is answered 429 at once.',
    default: 'true',
  },
  'pdlink.admission.classes': { doc: 'The priority classes, highest first.', default: defaultClasses },
  'pdlink.admission.classes[].name': { doc: "The class's name, as the class header, tenants and metric labels spell it; no two alike." },
  'pdlink.admission.classes[].queue_timeout_ms': {
    doc: 'How long a request of this class may wait for room; then 429 with `Retry-After` (503 when no instance could serve it at all). 0: refused at once when there is no room.',
    default: `${FALLBACK_QUEUE_TIMEOUT_MS} (default classes: ${classTimeouts})`,
  },
  'pdlink.admission.default_class': {
    doc: 'The class of requests whose tenant names none and which ask for none.',
    default: 'the first class',
  },
  'pdlink.admission.tenant_header': {
    doc: "The request header naming the tenant when API keys are off; without it the tenant is the client's address.",
    default: JSON.stringify(DEFAULT_TENANT_HEADER),
  },
  'pdlink.admission.class_header': {
    doc: "The request header asking for a class; a class above the tenant's `max_class` gets `max_class`, an unknown one 400.",
    default: JSON.stringify(DEFAULT_CLASS_HEADER),
  },
  'pdlink.admission.tenants': {
    doc: `Tenants by name, each with \`weight\` (its share of its class when several tenants wait, default ${limits.weight.default}), \`class\` (of its requests that ask for none, default \`default_class\`) and \`max_class\` (the highest its requests may ask for, default its class). A tenant not listed has weight ${limits.weight.default} and \`default_class\`.`,
    default: '{}',
  },
  'pdlink.admission.max_queued': {
    doc: "Requests waiting at once, over every class; past it a waiting request of the lowest class below the newcomer's is shed (429), else the newcomer is refused. 0: never queue.",
    default: String(limits.maxQueued.default),
  },
  'pdlink.admission.max_queued_bytes': {
    doc: 'Request bodies held by waiting requests, in bytes, bounded as `max_queued` bounds their number.',
    default: String(limits.maxQueuedBytes.default),
  },
  'pdlink.admission.preemption': {
    doc: 'true lets a request that must wait cut an admitted request of a lower class that has received no byte yet (answered 503).',
    default: 'false',
  },
  'pdlink.admission.retry_after_seconds': {
    doc: 'The `Retry-After` of every refusal admission gives.',
    default: String(limits.retryAfterSeconds.default),
  },
  'pdlink.admission.prefill': {
    doc: 'Limits past which a prefill instance counts as full, on top of its free slots and blocks; a request that D prefills itself needs no P room.',
  },
  'pdlink.admission.prefill.max_in_flight_per_instance': {
    doc: 'Requests of this Coordinator a P may be prefilling at once.',
    default: 'none (off)',
  },
  'pdlink.admission.prefill.max_queued_tokens_per_instance': {
    doc: "Prompt tokens (blocks × block size) of this Coordinator's requests a P may be prefilling at once.",
    default: 'none (off)',
  },
  'pdlink.admission.decode': { doc: 'Limits past which a decode instance counts as full, on top of its free slots and blocks.' },
  'pdlink.admission.decode.max_in_flight_per_instance': {
    doc: 'Requests of this Coordinator a D may hold at once.',
    default: 'none (off)',
  },
  'pdlink.admission.decode.max_kv_usage': {
    doc: "Share of a D's KV blocks in use (its last refresh minus this Coordinator's reservations) at which it is full.",
    default: 'none (off)',
  },
};

/** Every key of the `pdlink` section of `ms_coordinator.json`. */
export const coordinatorPdlinkKeys: KeyDocs = {
  ...sharedPdlinkKeys('the Coordinator', 'master lock (master/standby)'),
  ...proxy,
  ...security,
  ...admission,
};
