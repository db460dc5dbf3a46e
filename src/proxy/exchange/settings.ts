/**
 * The proxy's settings: MindIE's `exception_config`, `request_limit` and
 * `http_config.http_timeout_seconds` (seconds, counts) as the Coordinator file gives them, plus pdlink's own millisecond values under `proxy_config`, plus
 * programmatic overrides (what a gateway embedding pdlink passes). A timeout of 0 disables it,
 * as in MindIE's file.
 */
import * as v from 'valibot';
import { errors } from '../../core/errors.ts';
import {
  BODY_LIMIT_MB,
  HTTP_TIMEOUT_SECONDS,
  MAX_REQUESTS,
  MAX_TIMER_MS,
  ProxyConfigSection,
  type CoordinatorConfigFile,
} from '../../schema/coordinator-config.ts';
import { parseOrRefuse } from '../../schema/issues.ts';
import type { ClientTlsOptions } from '../../platform/tls-options.ts';
import {
  ENGINE_CLIENTS,
  MAX_ANSWER_BYTES,
  MAX_IDLE_CONNECTIONS,
  SGLANG_DEFAULT_BOOTSTRAP_PORT,
  type EngineClient,
  type ProxyProtocol,
} from '../../schema/proxy-protocol.ts';

export interface ProxySettings {
  /** One prefill attempt, from sending P's request to P's complete answer (ms; Infinity = none). */
  prefillTimeoutMs: number;
  /** From the request's arrival to the first byte of D's answer (ms; Infinity = none). */
  firstTokenTimeoutMs: number;
  /** From the request's arrival to the end of D's answer (ms; Infinity = none). */
  inferTimeoutMs: number;
  /** Further prefill attempts after a P answered 5xx or could not be reached. */
  maxRetries: number;
  /** Backoff before retry n: a uniformly random wait in [0, min(cap, base·2^(n−1))] ms. */
  backoffBaseMs: number;
  backoffCapMs: number;
  /** Requests in flight (body read to response ended) beyond which new ones get 429. */
  maxInFlight: number;
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
  /** Lease of the KV reservation; the proxy renews it while the request runs (ms). */
  leaseMs: number;
  /**
   * `http_config.http_timeout_seconds`: a leg fails when its engine sends nothing for this long —
   * no response head, or no next body chunk (ms; Infinity = none). See idle.ts.
   */
  engineIdleTimeoutMs: number;
  /** `tls_config.mindie_client_tls_*`: when present the legs go over https, verified and with this client certificate. */
  engineTls?: ClientTlsOptions;
  /** `pdlink.proxy.protocol`: the engines' PD protocol (vLLM's two legs in turn, or SGLang's bootstrap). */
  protocol: ProxyProtocol;
  /** `pdlink.proxy.bootstrap_port`: P's SGLang bootstrap port when its refresh entry names none. */
  bootstrapPort: number;
  /**
   * `pdlink.proxy.engine_client`: plain-HTTP legs over pdlink's own client on the runtime's sockets
   * (`sockets`, on Bun; Deno has fetch only) or over `fetch`. https legs always use fetch.
   */
  engineClient: EngineClient;
  /**
   * `pdlink.proxy.max_answer_bytes`: the largest answer read whole (P's, a non-streamed D's, an
   * error body); past it the request fails alone, charged to the engine.
   */
  maxAnswerBytes: number;
  /**
   * `pdlink.proxy.max_idle_connections`: idle keep-alive connections the socket client keeps over
   * every engine (process-wide); undefined: a quarter of the process's fd limit, at most 1024.
   */
  maxIdleConnections?: number;
}

/** MindIE's defaults: 600 s for both timeouts, 5 retries. */
export const MINDIE_TIMEOUT_SECONDS = 600;
export const MINDIE_MAX_RETRY = 5;
export const DEFAULT_BACKOFF_BASE_MS = 50;
export const DEFAULT_BACKOFF_CAP_MS = 2_000;
export const DEFAULT_LEASE_MS = 30_000;
export { MAX_TIMER_MS, ProxyConfigSection };

/**
 * Resolves the proxy settings from the Coordinator file (sections `exception_config`,
 * `request_limit`, `proxy_config`) and programmatic overrides, which win.
 * @throws PdlinkError `config_invalid` naming the key, e.g. `proxy_config.backoff_base_ms`.
 * @example const settings = resolveProxySettings(coordinatorSettings.file, { maxRetries: 2 });
 */
export function resolveProxySettings(file: CoordinatorConfigFile = {}, overrides: Partial<ProxySettings> = {}): ProxySettings {
  const own = parseOrRefuse(
    v.optional(ProxyConfigSection, {}),
    file['proxy_config'],
    (issues) => errors.configInvalid(issues, 'proxy_config'),
    {
      at: 'proxy_config',
    },
  );
  const exception = file.exception_config ?? {};
  const limits = file.request_limit ?? {};
  const firstToken = seconds(exception.first_token_timeout ?? MINDIE_TIMEOUT_SECONDS);
  const settings: ProxySettings = {
    prefillTimeoutMs: own.prefill_timeout_ms === undefined || own.prefill_timeout_ms === 0 ? firstToken : own.prefill_timeout_ms,
    firstTokenTimeoutMs: firstToken,
    inferTimeoutMs: seconds(exception.infer_timeout ?? MINDIE_TIMEOUT_SECONDS),
    maxRetries: exception.max_retry ?? MINDIE_MAX_RETRY,
    backoffBaseMs: own.backoff_base_ms ?? DEFAULT_BACKOFF_BASE_MS,
    backoffCapMs: own.backoff_cap_ms ?? DEFAULT_BACKOFF_CAP_MS,
    maxInFlight: limits.max_requests ?? MAX_REQUESTS.default,
    bodyLimitBytes: (limits.body_limit ?? BODY_LIMIT_MB.default) * 1024 * 1024,
    leaseMs: own.lease_ms ?? DEFAULT_LEASE_MS,
    engineIdleTimeoutMs: seconds(file.http_config?.http_timeout_seconds ?? HTTP_TIMEOUT_SECONDS.default),
    protocol: file.pdlink?.proxy?.protocol ?? 'vllm',
    bootstrapPort: file.pdlink?.proxy?.bootstrap_port ?? SGLANG_DEFAULT_BOOTSTRAP_PORT,
    engineClient: file.pdlink?.proxy?.engine_client ?? 'sockets',
    maxAnswerBytes: file.pdlink?.proxy?.max_answer_bytes ?? MAX_ANSWER_BYTES.default,
    ...(file.pdlink?.proxy?.max_idle_connections === undefined ? {} : { maxIdleConnections: file.pdlink.proxy.max_idle_connections }),
    ...overrides,
  };
  return checkSettings(settings);
}

/**
 * Checks every value of a complete settings object, so a programmatic override cannot smuggle in
 * a negative timeout or a fractional count.
 * @example checkSettings({ ...resolveProxySettings(), maxRetries: 1 })
 */
export function checkSettings(settings: ProxySettings): ProxySettings {
  const issues: { path: string; message: string }[] = [];
  type NumberKey = Exclude<keyof ProxySettings, 'engineTls' | 'protocol' | 'engineClient' | 'maxIdleConnections'>;
  const timeout = (key: NumberKey): void => {
    const value = settings[key];
    if (!(value === Infinity || (Number.isInteger(value) && value > 0 && value <= MAX_TIMER_MS))) {
      issues.push({ path: key, message: `must be an integer number of milliseconds in [1, ${MAX_TIMER_MS}], or Infinity for none` });
    }
  };
  const count = (key: NumberKey, min: number): void => {
    const value = settings[key];
    if (!Number.isSafeInteger(value) || value < min) issues.push({ path: key, message: `must be an integer ≥ ${min}` });
  };
  timeout('prefillTimeoutMs');
  timeout('firstTokenTimeoutMs');
  timeout('inferTimeoutMs');
  timeout('engineIdleTimeoutMs');
  count('maxRetries', 0);
  count('backoffBaseMs', 1);
  count('backoffCapMs', 1);
  count('maxInFlight', 1);
  count('bodyLimitBytes', 1);
  const answer = settings.maxAnswerBytes;
  if (!(Number.isInteger(answer) && answer >= MAX_ANSWER_BYTES.min && answer <= MAX_ANSWER_BYTES.max)) {
    issues.push({
      path: 'maxAnswerBytes',
      message: `must be an integer number of bytes in [${MAX_ANSWER_BYTES.min}, ${MAX_ANSWER_BYTES.max}]`,
    });
  }
  const idle = settings.maxIdleConnections;
  if (idle !== undefined && !(Number.isInteger(idle) && idle >= MAX_IDLE_CONNECTIONS.min && idle <= MAX_IDLE_CONNECTIONS.max)) {
    issues.push({
      path: 'maxIdleConnections',
      message: `must be an integer in [${MAX_IDLE_CONNECTIONS.min}, ${MAX_IDLE_CONNECTIONS.max}]`,
    });
  }
  if (!(Number.isInteger(settings.leaseMs) && settings.leaseMs > 0 && settings.leaseMs <= MAX_TIMER_MS)) {
    issues.push({ path: 'leaseMs', message: `must be an integer number of milliseconds in [1, ${MAX_TIMER_MS}]` });
  }
  if (settings.protocol !== 'vllm' && settings.protocol !== 'sglang') issues.push({ path: 'protocol', message: 'must be vllm or sglang' });
  if (!ENGINE_CLIENTS.includes(settings.engineClient)) {
    issues.push({ path: 'engineClient', message: `must be one of ${ENGINE_CLIENTS.join(', ')}` });
  }
  if (!(Number.isInteger(settings.bootstrapPort) && settings.bootstrapPort >= 1 && settings.bootstrapPort <= 65535)) {
    issues.push({ path: 'bootstrapPort', message: 'must be an integer port in [1, 65535]' });
  }
  if (issues.length > 0) throw errors.configInvalid(issues, 'proxy settings');
  return settings;
}

function seconds(value: number): number {
  return value === 0 ? Infinity : value * 1000;
}
