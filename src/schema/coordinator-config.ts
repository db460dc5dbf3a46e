/**
 * Schema of the Coordinator's configuration file, MindIE's `ms_coordinator.json` layout.
 * Only the keys pdlink acts on are checked; every other key is accepted as it is, so a MindIE file
 * can be used unchanged.
 */
import * as v from 'valibot';
import { DecodePolicySchema, PrefillPolicySchema } from '../scheduler/types.ts';
import { PdlinkSection } from './store-config.ts';

export const MIN_PORT = 1024;
export const MAX_PORT = 65535;
/** `request_limit.body_limit` range in MB, as MindIE documents it. */
export const BODY_LIMIT_MB = { min: 1, max: 20, default: 8 } as const;
export const MAX_REQUESTS = { min: 1, max: 90000, default: 10000 } as const;
export const SINGLE_NODE_MAX_REQUESTS = { min: 1, max: 2000, default: 1000 } as const;
export const HTTP_TIMEOUT_SECONDS = { min: 0, max: 3600, default: 600 } as const;
/** `scheduler.circuit_breaker.cooldown_ms`: how long an open circuit refuses requests before its trial. */
export const CIRCUIT_COOLDOWN_MS = { min: 1, max: 2 ** 31 - 1, default: 30_000 } as const;

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

const TlsItems = v.looseObject({
  ca_cert: v.optional(v.string()),
  tls_cert: v.optional(v.string()),
  tls_key: v.optional(v.string()),
  tls_passwd: v.optional(v.string()),
  tls_crl: v.optional(v.string()),
});

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
      policy: v.optional(v.looseObject({ prefill: v.optional(PrefillPolicySchema), decode: v.optional(DecodePolicySchema) })),
      circuit_breaker: v.optional(v.looseObject({ cooldown_ms: v.optional(intIn(CIRCUIT_COOLDOWN_MS.min, CIRCUIT_COOLDOWN_MS.max)) })),
    }),
  ),
  /** MindIE's master/standby: one master holds the etcd lock, a standby's readiness is 503 "not master". */
  backup_config: v.optional(
    v.looseObject({
      function_enable: v.optional(v.boolean('must be a boolean')),
      database_server_dns: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
      database_server_port: v.optional(ConfigPort),
    }),
  ),
  /** pdlink's own: cluster name and the shared etcd (absent: this Coordinator alone, as before). */
  pdlink: v.optional(PdlinkSection),
  tls_config: v.optional(
    v.looseObject({
      controller_server_tls_enable: v.optional(v.boolean('must be a boolean')),
      controller_server_tls_items: v.optional(TlsItems),
      request_server_tls_enable: v.optional(v.boolean('must be a boolean')),
      request_server_tls_items: v.optional(TlsItems),
    }),
  ),
});

export type CoordinatorConfigFile = v.InferOutput<typeof CoordinatorConfigFile>;
export type TlsItems = v.InferOutput<typeof TlsItems>;
