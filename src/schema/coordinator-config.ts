/**
 * Schema of the Coordinator's configuration file, MindIE's `ms_coordinator.json` layout, all of it
 * (MindIE's sections, and pdlink's own `scheduler` and `proxy_config`) in this one module. Only the
 * keys pdlink acts on are checked; every other key is accepted as it is, so a MindIE file can be
 * used unchanged. The scheduler and the proxy take plain option objects resolved from it.
 */
import * as v from 'valibot';
import { AdmissionSection } from './admission-config.ts';
import { KvEventsSection } from './kv-events-config.ts';
import { AllowedNetworks, HttpCaps, SecretFilePath } from './security.ts';
import { INT32_MAX } from '../core/limits.ts';
import { ProxyProtocolSection } from './proxy-protocol.ts';
import { PdlinkSection } from './store-config.ts';
import { TracingSection } from './tracing-config.ts';
import { TlsItems } from './tls-items.ts';

export const MIN_PORT = 1024;
export const MAX_PORT = 65535;
/** `request_limit.body_limit` range in MB, as MindIE documents it. */
export const BODY_LIMIT_MB = { min: 1, max: 20, default: 8 } as const;
export const MAX_REQUESTS = { min: 1, max: 90000, default: 10000 } as const;
export const SINGLE_NODE_MAX_REQUESTS = { min: 1, max: 2000, default: 1000 } as const;
export const HTTP_TIMEOUT_SECONDS = { min: 0, max: 3600, default: 600 } as const;
/** `scheduler.circuit_breaker.cooldown_ms`: how long an open circuit refuses requests before its trial. */
export const CIRCUIT_COOLDOWN_MS = { min: 1, max: INT32_MAX, default: 30_000 } as const;

/** What a policy's name may be: lowercase letters, digits and `_`, starting with a letter. */
export const POLICY_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * A policy's name as `scheduler.policy.prefill` / `.decode` spell it. Which names exist, and for
 * which role, is the scheduler's policy table's to say (config/coordinator.ts checks it there), so a
 * gateway's own policies are named as the built-in ones are.
 */
export const PolicyNameSchema = v.pipe(
  v.string('must be a policy name'),
  v.regex(POLICY_NAME, 'must be a policy name (lowercase letters, digits and _, starting with a letter)'),
);

/** Longest timer a JavaScript platform honours (2^31−1 ms); longer values would fire at once. */
export const MAX_TIMER_MS = INT32_MAX;

const ms = (min: number) =>
  v.pipe(
    v.number('must be a number of milliseconds'),
    v.integer('must be an integer number of milliseconds'),
    v.minValue(min, `must be in [${min}, ${MAX_TIMER_MS}]`),
    v.maxValue(MAX_TIMER_MS, `must be in [${min}, ${MAX_TIMER_MS}]`),
  );

/** pdlink's own `proxy_config` section: the proxy's millisecond values; every key optional. */
export const ProxyConfigSection = v.looseObject({
  /** 0 = bounded by first_token_timeout only. */
  prefill_timeout_ms: v.optional(ms(0)),
  backoff_base_ms: v.optional(ms(1)),
  backoff_cap_ms: v.optional(ms(1)),
  lease_ms: v.optional(ms(1)),
});

/** A port as MindIE writes it (a decimal string) or as a plain integer. */
export const ConfigPort = v.pipe(
  v.union(
    [v.pipe(v.string(), v.regex(/^\d{1,5}$/, 'must be a decimal port number')), v.pipe(v.number(), v.integer())],
    'must be a port number (string or integer)',
  ),
  v.transform(Number),
  v.minValue(MIN_PORT, `must be in [${MIN_PORT}, ${MAX_PORT}]`),
  v.maxValue(MAX_PORT, `must be in [${MIN_PORT}, ${MAX_PORT}]`),
);

export const ConfigIp = v.pipe(v.string(), v.ip('must be an IPv4 or IPv6 address'));

const intIn = (min: number, max: number) =>
  v.pipe(
    v.number(),
    v.integer('must be an integer'),
    v.minValue(min, `must be in [${min}, ${max}]`),
    v.maxValue(max, `must be in [${min}, ${max}]`),
  );

export const CoordinatorConfigFile = v.looseObject({
  http_config: v.optional(
    v.looseObject({
      predict_ip: v.optional(ConfigIp),
      predict_port: v.optional(ConfigPort),
      manage_ip: v.optional(ConfigIp),
      manage_port: v.optional(ConfigPort),
      allow_all_zero_ip_listening: v.optional(v.boolean('must be a boolean')),
      http_timeout_seconds: v.optional(intIn(HTTP_TIMEOUT_SECONDS.min, HTTP_TIMEOUT_SECONDS.max)),
      keep_alive_seconds: v.optional(intIn(0, 3600)),
      server_name: v.optional(v.string()),
      user_agent: v.optional(v.string()),
    }),
  ),
  request_limit: v.optional(
    v.looseObject({
      single_node_max_requests: v.optional(intIn(SINGLE_NODE_MAX_REQUESTS.min, SINGLE_NODE_MAX_REQUESTS.max)),
      max_requests: v.optional(intIn(MAX_REQUESTS.min, MAX_REQUESTS.max)),
      body_limit: v.optional(intIn(BODY_LIMIT_MB.min, BODY_LIMIT_MB.max)),
    }),
  ),
  exception_config: v.optional(
    v.looseObject({
      max_retry: v.optional(intIn(0, 100)),
      schedule_timeout: v.optional(intIn(0, 3600)),
      first_token_timeout: v.optional(intIn(0, 3600)),
      infer_timeout: v.optional(intIn(0, 65535)),
    }),
  ),
  digs_scheduler_config: v.optional(
    v.looseObject({
      deploy_mode: v.optional(v.string()),
      scheduler_type: v.optional(v.string()),
      algorithm_type: v.optional(v.string()),
    }),
  ),
  /**
   * pdlink's own: pair-selection policy per role (MindIE's digs_scheduler_config.algorithm_type maps
   * onto prefill), and the circuit breakers' cool-down.
   */
  scheduler: v.optional(
    v.looseObject({
      policy: v.optional(v.looseObject({ prefill: v.optional(PolicyNameSchema), decode: v.optional(PolicyNameSchema) })),
      circuit_breaker: v.optional(v.looseObject({ cooldown_ms: v.optional(intIn(CIRCUIT_COOLDOWN_MS.min, CIRCUIT_COOLDOWN_MS.max)) })),
      /**
       * Conditional disaggregation, off unless a limit is set: D prefills a request itself when its
       * uncached prompt is at most max_local_prefill_length tokens, or every P holds more than
       * max_prefill_queue_size of this Coordinator's requests.
       */
      conditional_disaggregation: v.optional(
        v.looseObject({
          max_local_prefill_length: v.optional(intIn(0, 1 << 24)),
          max_prefill_queue_size: v.optional(intIn(0, 1 << 20)),
          /** Choose D first (precise_prefix): D prefills locally when it holds all but max_local_prefill_length tokens, or no P can take the request. */
          decode_first: v.optional(v.boolean('must be a boolean')),
        }),
      ),
      /** precise_prefix's weight of load against the share of the prompt cached (default 1). */
      precise_prefix: v.optional(
        v.looseObject({
          load_weight: v.optional(v.pipe(v.number('must be a number'), v.minValue(0, 'must be ≥ 0'), v.maxValue(1000, 'must be ≤ 1000'))),
        }),
      ),
      /** The engines' KV events: the index's hash seed and bounds, the intake's limits (schema/kv-events-config.ts). */
      kv_events: v.optional(KvEventsSection),
      /** Per model name, the directory holding its tokenizer.json (and tokenizer_config.json with the chat template). */
      tokenizers: v.optional(
        v.record(
          v.pipe(v.string(), v.minLength(1, 'must not be empty')),
          v.pipe(v.string('must be a directory path'), v.minLength(1, 'must not be empty')),
        ),
      ),
    }),
  ),
  proxy_config: v.optional(ProxyConfigSection),
  /** MindIE's master/standby: one master holds the etcd lock, a standby's readiness is 503 "not master". */
  backup_config: v.optional(
    v.looseObject({
      function_enable: v.optional(v.boolean('must be a boolean')),
      database_server_dns: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
      database_server_port: v.optional(ConfigPort),
    }),
  ),
  /**
   * pdlink's own: the cluster name and the shared etcd (absent: this Coordinator alone, as before);
   * bearer secrets, the instance allow-list, listener caps, the rate limit; tracing.
   */
  pdlink: v.optional(
    v.looseObject({
      ...PdlinkSection.entries,
      auth: v.optional(
        v.looseObject({
          management_token_file: v.optional(SecretFilePath),
          api_keys_file: v.optional(SecretFilePath),
        }),
      ),
      proxy: v.optional(
        v.strictObject({ ...ProxyProtocolSection.entries, forward_authorization: v.optional(v.boolean('must be a boolean')) }),
      ),
      allowed_instance_networks: v.optional(AllowedNetworks),
      tracing: v.optional(TracingSection),
      /** Priority classes, tenants, the queue and per-stage saturation (schema/admission-config.ts). */
      admission: v.optional(AdmissionSection),
      http: v.optional(HttpCaps),
      rate_limit: v.optional(
        v.looseObject({
          requests_per_second: v.pipe(
            v.number('must be a number'),
            v.minValue(0.001, 'must be > 0'),
            v.maxValue(1_000_000, 'must be ≤ 1000000'),
          ),
          burst: v.optional(intIn(1, 1_000_000)),
        }),
      ),
    }),
  ),
  tls_config: v.optional(
    v.looseObject({
      controller_server_tls_enable: v.optional(v.boolean('must be a boolean')),
      controller_server_tls_items: v.optional(TlsItems),
      request_server_tls_enable: v.optional(v.boolean('must be a boolean')),
      request_server_tls_items: v.optional(TlsItems),
      /** The Coordinator's legs to the engines: https, verified with ca_cert, presenting tls_cert. */
      mindie_client_tls_enable: v.optional(v.boolean('must be a boolean')),
      mindie_client_tls_items: v.optional(TlsItems),
    }),
  ),
});

export type CoordinatorConfigFile = v.InferOutput<typeof CoordinatorConfigFile>;
export type { TlsItems };
