/**
 * Resolves the Coordinator's settings with the seed's precedence: command-line argument, then the
 * configuration file, then the embedded defaults.
 */
import type { LocalPrefillRule } from '../scheduler/pd-path.ts';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { refuseAllInterfaces } from '../net/all-interfaces.ts';
import { ConfigError, PdlinkError } from '../core/errors.ts';
import {
  BODY_LIMIT_MB,
  CIRCUIT_COOLDOWN_MS,
  CoordinatorConfigFile,
  HTTP_TIMEOUT_SECONDS,
  MAX_REQUESTS,
  SINGLE_NODE_MAX_REQUESTS,
  type TlsItems as CoordinatorTlsItems,
} from '../schema/coordinator-config.ts';
import type { ServerTlsOptions } from '../platform/tls-options.ts';
import { loadConfigFile } from './load.ts';
import { ETCD_ENDPOINTS_ENV, resolveStoreSettings, type StoreSettings } from './store.ts';
import { clientTlsOf, serverTlsOf } from './tls.ts';
import { readApiKeyFile, readManagementToken } from './secret-file.ts';
import type { AdmissionSection } from '../schema/admission-config.ts';
import { DEFAULT_MAX_CONNECTIONS } from '../http/connection-cap.ts';
import type { RateLimitSettings } from '../http/rate-limit.ts';
import { resolveTracingSettings } from './tracing.ts';
import type { OtlpTracingSettings } from '../proxy/telemetry/otlp-export.ts';
import { resolveProxySettings, type ProxySettings } from '../proxy/exchange/settings.ts';
import { DEFAULT_POLICY, DEFAULT_PREFILL_POLICY, policyDefinition, policyFor, type PolicyChoice } from '../scheduler/index.ts';

export const CONFIG_PATH_ENV = 'MINDIE_MS_COORDINATOR_CONFIG_FILE_PATH';
export const DEFAULT_CONFIG_FILE = 'ms_coordinator.json';

export const COORDINATOR_DEFAULTS = {
  manageIp: '127.0.0.1',
  managePort: 1026,
  predictIp: '127.0.0.1',
  predictPort: 1025,
} as const;

/** Values given on the command line; absent keys fall through to the file, then the defaults. */
export interface CoordinatorArgs {
  config?: string;
  manageIp?: string;
  managePort?: number;
  predictIp?: string;
  predictPort?: number;
}

export interface ListenSettings {
  ip: string;
  port: number;
  tls?: ServerTlsOptions;
}

export interface CoordinatorSettings {
  /** Where the file settings came from: a path, or `defaults`. */
  source: string;
  manage: ListenSettings;
  predict: ListenSettings;
  allowAllZeroIp: boolean;
  bodyLimitBytes: number;
  maxRequests: number;
  singleNodeMaxRequests: number;
  httpTimeoutSeconds: number;
  keepAliveSeconds: number;
  /** Pair-selection policy per role. */
  policy: PolicyChoice;
  /** How long an open circuit refuses requests before its trial (`scheduler.circuit_breaker.cooldown_ms`). */
  circuitCooldownMs: number;
  /** Conditional disaggregation (`scheduler.conditional_disaggregation`); empty = off. */
  localPrefill: LocalPrefillRule;
  /** PD proxy: leg timeouts, retries, in-flight limit (from exception_config, request_limit, proxy_config). */
  proxy: ProxySettings;
  /** Several Coordinators on one etcd (undefined: this one alone, state in memory). */
  ha: CoordinatorHaSettings | undefined;
  /** Bearer secrets, allow-list, caps and rate limit (the `pdlink` section and the env). */
  security: CoordinatorSecurity;
  /** Where the proxy's spans go (pdlink.tracing, OTEL_EXPORTER_OTLP_ENDPOINT); undefined: tracing off. */
  tracing: OtlpTracingSettings | undefined;
  /** `pdlink.admission` as checked (apps/coordinator.ts resolves its defaults); empty: admission's defaults. */
  admission: AdmissionSection;
  /** The file as accepted, unknown keys included, for the parts that read their own sections. */
  file: CoordinatorConfigFile;
}

export interface CoordinatorSecurity {
  /** `pdlink.auth.management_token_file`: the management listener's bearer token; undefined = open. */
  managementToken?: string;
  /** `pdlink.auth.api_keys_file`: the inference listener's accepted keys; undefined = open. */
  apiKeys?: string[];
  /** The tenant of each key written `TENANT KEY` in the keys file. */
  apiKeyTenants?: Map<string, string>;
  /** `pdlink.proxy.forward_authorization`: default on without API keys, off with them. */
  forwardAuthorization: boolean;
  /** `pdlink.allowed_instance_networks`; undefined = any address but the ones always refused. */
  allowedNetworks?: string[];
  /** `pdlink.http.max_connections`: requests served at once per listener before 503. */
  maxConnections: number;
  /** `pdlink.rate_limit`: per-client token bucket on the inference listener; undefined = off. */
  rateLimit?: RateLimitSettings;
}

/**
 * `master_standby`: MindIE's backup_config.function_enable, one master holds the lock and the
 * others answer readiness 503 "not master". `active_active`: every Coordinator serves.
 */
export interface CoordinatorHaSettings {
  mode: 'master_standby' | 'active_active';
  store: StoreSettings;
}

/** MindIE's etcd client port, when backup_config names a server without one. */
export const MINDIE_ETCD_PORT = 2379;

/**
 * Picks the configuration file: `--config`, else the env variable, else `./ms_coordinator.json`
 * when present, else none (embedded defaults).
 * @example findConfigPath({}, process.env, process.cwd())
 */
export function findConfigPath(args: CoordinatorArgs, env: Record<string, string | undefined>, cwd: string): string | undefined {
  if (args.config !== undefined) return resolve(cwd, args.config);
  const fromEnv = env[CONFIG_PATH_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return resolve(cwd, fromEnv);
  const local = resolve(cwd, DEFAULT_CONFIG_FILE);
  return existsSync(local) ? local : undefined;
}

/**
 * Resolves every setting; throws ConfigError (exit status 2) naming the key on any problem.
 * @example resolveCoordinatorSettings({ managePort: 0 }, process.env, process.cwd())
 */
export function resolveCoordinatorSettings(
  args: CoordinatorArgs,
  env: Record<string, string | undefined>,
  cwd: string,
): CoordinatorSettings {
  const path = findConfigPath(args, env, cwd);
  const file: CoordinatorConfigFile = path === undefined ? {} : loadConfigFile(path, CoordinatorConfigFile);
  const http = file.http_config ?? {};
  const limits = file.request_limit ?? {};
  const tls = file.tls_config ?? {};
  const allowAllZeroIp = http.allow_all_zero_ip_listening ?? false;

  const manage: ListenSettings = {
    ip: args.manageIp ?? http.manage_ip ?? COORDINATOR_DEFAULTS.manageIp,
    port: args.managePort ?? http.manage_port ?? COORDINATOR_DEFAULTS.managePort,
  };
  const predict: ListenSettings = {
    ip: args.predictIp ?? http.predict_ip ?? COORDINATOR_DEFAULTS.predictIp,
    port: args.predictPort ?? http.predict_port ?? COORDINATOR_DEFAULTS.predictPort,
  };
  for (const [key, listen] of [
    ['manage_ip', manage],
    ['predict_ip', predict],
  ] as const) {
    refuseAllInterfaces(key, listen.ip, allowAllZeroIp, 'http_config.allow_all_zero_ip_listening');
  }
  const manageTls = listenerTls('controller_server', tls.controller_server_tls_enable, tls.controller_server_tls_items);
  if (manageTls !== undefined) manage.tls = manageTls;
  const predictTls = listenerTls('request_server', tls.request_server_tls_enable, tls.request_server_tls_items);
  if (predictTls !== undefined) predict.tls = predictTls;
  const engineTls = clientTlsOf(
    'tls_config.mindie_client_tls_enable',
    'tls_config.mindie_client_tls_items',
    tls.mindie_client_tls_enable,
    tls.mindie_client_tls_items,
  );

  return {
    source: path ?? 'defaults',
    manage,
    predict,
    allowAllZeroIp,
    bodyLimitBytes: (limits.body_limit ?? BODY_LIMIT_MB.default) * 1024 * 1024,
    maxRequests: limits.max_requests ?? MAX_REQUESTS.default,
    singleNodeMaxRequests: limits.single_node_max_requests ?? SINGLE_NODE_MAX_REQUESTS.default,
    httpTimeoutSeconds: http.http_timeout_seconds ?? HTTP_TIMEOUT_SECONDS.default,
    keepAliveSeconds: http.keep_alive_seconds ?? 180,
    policy: policyOf(file, path ?? 'defaults'),
    circuitCooldownMs: file.scheduler?.circuit_breaker?.cooldown_ms ?? CIRCUIT_COOLDOWN_MS.default,
    localPrefill: localPrefillOf(file),
    proxy:
      engineTls === undefined ? proxySettingsOf(file, path ?? 'defaults') : { ...proxySettingsOf(file, path ?? 'defaults'), engineTls },
    ha: haSettingsOf(file, env, path ?? 'defaults'),
    security: securityOf(file, env),
    tracing: resolveTracingSettings(file.pdlink?.tracing, env),
    admission: file.pdlink?.admission ?? {},
    file,
  };
}

function securityOf(file: CoordinatorConfigFile, env: Record<string, string | undefined>): CoordinatorSecurity {
  const own = file.pdlink ?? {};
  const managementToken = readManagementToken(own.auth?.management_token_file, env);
  const keyFile = readApiKeyFile(own.auth?.api_keys_file, env);
  const apiKeys = keyFile?.keys;
  const security: CoordinatorSecurity = {
    // With API keys on, the client's key is for pdlink alone; without them, engines may expect it.
    forwardAuthorization: own.proxy?.forward_authorization ?? apiKeys === undefined,
    maxConnections: own.http?.max_connections ?? DEFAULT_MAX_CONNECTIONS,
  };
  if (managementToken !== undefined) security.managementToken = managementToken;
  if (apiKeys !== undefined) security.apiKeys = apiKeys;
  if (keyFile !== undefined && keyFile.tenants.size > 0) security.apiKeyTenants = keyFile.tenants;
  if (own.allowed_instance_networks !== undefined) security.allowedNetworks = own.allowed_instance_networks;
  if (own.rate_limit !== undefined) {
    const rate = own.rate_limit.requests_per_second;
    security.rateLimit = { ratePerSecond: rate, burst: own.rate_limit.burst ?? Math.max(1, Math.ceil(rate)) };
  }
  return security;
}

/** `scheduler.conditional_disaggregation`: each limit applies only when set. */
function localPrefillOf(file: CoordinatorConfigFile): LocalPrefillRule {
  const section = file.scheduler?.conditional_disaggregation ?? {};
  return {
    ...(section.max_local_prefill_length === undefined ? {} : { maxLocalPrefillLength: section.max_local_prefill_length }),
    ...(section.max_prefill_queue_size === undefined ? {} : { maxPrefillQueueSize: section.max_prefill_queue_size }),
  };
}

/**
 * `scheduler.policy` wins; else MindIE's `digs_scheduler_config.algorithm_type` names the prefill
 * policy when it is one pdlink has for prefill; else cache_affinity (decode: load_balance). A name
 * the policy table does not have for its role stops the start, naming the key.
 */
function policyOf(file: CoordinatorConfigFile, source: string): PolicyChoice {
  const own = file.scheduler?.policy ?? {};
  const mindie = file.digs_scheduler_config?.algorithm_type;
  const fromMindie = mindie !== undefined && policyDefinition(mindie)?.roles.includes('prefill') === true ? mindie : undefined;
  const choice = { prefill: own.prefill ?? fromMindie ?? DEFAULT_PREFILL_POLICY, decode: own.decode ?? DEFAULT_POLICY };
  for (const role of ['prefill', 'decode'] as const) {
    try {
      policyFor(choice[role], role, `scheduler.policy.${role}`);
    } catch (err) {
      throw new ConfigError(`config file ${source}: ${(err as Error).message}`);
    }
  }
  return choice;
}

function haSettingsOf(
  file: CoordinatorConfigFile,
  env: Record<string, string | undefined>,
  source: string,
): CoordinatorHaSettings | undefined {
  const backup = file.backup_config ?? {};
  const masterStandby = backup.function_enable === true;
  // MindIE's own files name the etcd in backup_config even with the function off: only used when on.
  const dns = backup.database_server_dns;
  const fromBackup =
    masterStandby && dns !== undefined
      ? [`http://${dns.includes(':') ? `[${dns}]` : dns}:${backup.database_server_port ?? MINDIE_ETCD_PORT}`]
      : undefined;
  let store: StoreSettings | undefined;
  try {
    store = resolveStoreSettings(file.pdlink, env, fromBackup);
  } catch (err) {
    throw new ConfigError(`config file ${source}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (store === undefined) {
    if (masterStandby)
      throw new ConfigError(
        `config file ${source}: backup_config.function_enable: master/standby needs etcd: set pdlink.store.etcd.endpoints, backup_config.database_server_dns or env ${ETCD_ENDPOINTS_ENV}`,
      );
    return undefined;
  }
  return { mode: masterStandby ? 'master_standby' : 'active_active', store };
}

function proxySettingsOf(file: CoordinatorConfigFile, source: string): ProxySettings {
  try {
    return resolveProxySettings(file);
  } catch (err) {
    if (err instanceof PdlinkError) throw new ConfigError(`config file ${source}: ${err.message}`);
    throw err;
  }
}

function listenerTls(name: string, enabled: boolean | undefined, items: CoordinatorTlsItems | undefined): ServerTlsOptions | undefined {
  // MindIE defaults TLS on with certificates it ships; pdlink's embedded default is plain HTTP, and
  // TLS is on only when the file asks for it.
  return serverTlsOf(`tls_config.${name}_tls_enable`, `tls_config.${name}_tls_items`, enabled, items);
}
