/**
 * Resolves the instance agent's settings: management listener address and port, the local
 * devices with their link ports and cluster ids, and pool tuning.
 *
 * Management IP: `--manage_ip`, then env MIES_CONTAINER_MANAGEMENT_IP, then
 * `ServerConfig.managementIpAddress`, then `ServerConfig.ipAddress`, then 127.0.0.2 (MindIE's default).
 * Management port: `--manage_port`, then `managementPort`, then `port`, then 1026.
 * Devices: `pdlink.devices`, else one device 0 on the instance's `ipAddress`. Device `d` listens on
 * `device_ip:(link_base_port + d)`; its cluster id is its own `cluster_id`, else `pdlink.cluster_id`
 * (single device only), else computed from that address (src/links/endpoint.ts: IPv4 u32 × 65536 + port).
 */
import { InstanceAddressPolicy } from '../net/address-policy.ts';
import { DEFAULT_MAX_CONNECTIONS } from '../http/connection-cap.ts';
import { readManagementToken } from './secret-file.ts';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { refuseAllInterfaces } from '../net/all-interfaces.ts';
import { ConfigError } from '../core/errors.ts';
import { SECRET_MAX, SECRET_MIN, type LinkPortLimits } from '../core/limits.ts';
import type { ContextSecurity } from '../workers/protocol.ts';
import { clusterIdFor } from '../links/endpoint.ts';
import { DEFAULT_LINK_BASE_PORT, InstanceConfigFile, type InstanceConfig } from '../schema/instance-config.ts';
import type { Encoding } from '../workers/protocol.ts';
import type { LinkThreads } from '../workers/pool.ts';
import { loadConfigFile } from './load.ts';
import { clientTlsOf, serverTlsOf } from './tls.ts';
import type { ClientTlsOptions, ServerTlsOptions } from '../platform/tls-options.ts';
import type { TransferSettings } from '../agent/transfers/setup.ts';

export const MANAGEMENT_IP_ENV = 'MIES_CONTAINER_MANAGEMENT_IP';
/** MindIE's `managementIpAddress` default, so an agent beside a Coordinator on 127.0.0.1 does not collide with it. */
export const DEFAULT_MANAGE_IP = '127.0.0.2';
/** MindIE's `ipAddress` default: the engine's inference listener and, unless configured, device 0's link address. */
export const DEFAULT_SERVER_IP = '127.0.0.1';
/** The configuration key that allows listening on every interface. */
export const ALLOW_ALL_ZERO_KEY = 'ServerConfig.allowAllZeroIpListening';
export const LINK_SECRET_ENV = 'PDLINK_LINK_SECRET_FILE';
export const DEFAULT_MANAGE_PORT = 1026;

export interface InstanceArgs {
  config?: string;
  manageIp?: string;
  managePort?: number;
}

export interface DeviceSettings {
  /** Endpoint name in the link manager: the logical id as text. */
  readonly endpoint: string;
  readonly logicalId: number;
  readonly ip: string;
  readonly port: number;
  readonly clusterId: bigint;
}

export interface PoolSettings {
  readonly threads?: number;
  readonly batchWindowMs?: number;
  readonly maxBatch?: number;
  readonly encoding?: Encoding;
  /** Where link calls run: the runtime's threads (default, when it has a call queue) or worker threads. */
  readonly linkThreads?: LinkThreads;
}

export interface InstanceSettings {
  readonly manage: { readonly ip: string; readonly port: number };
  readonly devices: readonly DeviceSettings[];
  readonly pool: PoolSettings;
  /** KV transfer tuning (`pdlink.transfers`); unset keys take the agent's defaults. */
  readonly transfers: TransferSettings;
  /** `pdlink.link_base_port`: the role API derives peer link ports from it too. */
  readonly linkBasePort: number;
  /** `ServerConfig.allowAllZeroIpListening`: whether a listener may bind every interface. */
  readonly allowAllZeroIp: boolean;
  /** `pdlink.tls`: each listener's TLS and the client side of calls to other instances; absent = plain http. */
  readonly tls: InstanceTls;
  /** The link ports' cluster secret (`pdlink.auth.link_secret_file`) and caps (`pdlink.link_port`). */
  readonly security: ContextSecurity;
  /** The management listener's token (`pdlink.auth.management_token_file`), allow-list and cap. */
  readonly management: ManagementSecurity;
}

export interface ManagementSecurity {
  readonly managementToken?: string;
  readonly allowedNetworks?: readonly string[];
  readonly maxConnections: number;
}

export interface InstanceTls {
  readonly management?: ServerTlsOptions;
  readonly inference?: ServerTlsOptions;
  readonly client?: ClientTlsOptions;
}

function instanceTlsOf(tls: NonNullable<NonNullable<InstanceConfig['pdlink']>['tls']> | undefined): InstanceTls {
  const t = tls ?? {};
  const key = (k: string) => `pdlink.tls.${k}`;
  const management = serverTlsOf(
    key('management_tls_enable'),
    key('management_tls_items'),
    t.management_tls_enable,
    t.management_tls_items,
  );
  const inference = serverTlsOf(key('inference_tls_enable'), key('inference_tls_items'), t.inference_tls_enable, t.inference_tls_items);
  const client = clientTlsOf(key('client_tls_enable'), key('client_tls_items'), t.client_tls_enable, t.client_tls_items);
  return {
    ...(management === undefined ? {} : { management }),
    ...(inference === undefined ? {} : { inference }),
    ...(client === undefined ? {} : { client }),
  };
}

/**
 * The cluster secret from the file the config or env names, or undefined when neither names one.
 * Fails closed: a named file that is missing, unreadable, empty or too short stops the start,
 * naming the key (never the secret). Trailing whitespace (a final newline) is not part of it.
 */
function readLinkSecret(configured: string | undefined, env: Record<string, string | undefined>): Uint8Array | undefined {
  const fromEnv = env[LINK_SECRET_ENV];
  const [key, path] = fromEnv !== undefined && fromEnv !== '' ? [LINK_SECRET_ENV, fromEnv] : ['pdlink.auth.link_secret_file', configured];
  if (path === undefined) return undefined;
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new ConfigError(`${key}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let end = bytes.length;
  while (end > 0 && /\s/.test(String.fromCharCode(bytes[end - 1]!))) end--;
  if (end === 0) throw new ConfigError(`${key}: ${path} is empty`);
  if (end < SECRET_MIN || end > SECRET_MAX) throw new ConfigError(`${key}: ${path} must hold ${SECRET_MIN} to ${SECRET_MAX} bytes`);
  return new Uint8Array(bytes.subarray(0, end));
}

/**
 * Reads the config file named by `args.config` (if any) and applies the precedence rules.
 * @example const settings = resolveInstanceSettings({ config: 'config.json', managePort: 0 }, process.env);
 */
export function resolveInstanceSettings(args: InstanceArgs, env: Record<string, string | undefined>): InstanceSettings {
  const file: InstanceConfig = args.config === undefined ? {} : loadConfigFile(args.config, InstanceConfigFile);
  const source = args.config ?? 'defaults';
  const server = file.ServerConfig ?? {};
  const envIp = env[MANAGEMENT_IP_ENV];
  if (envIp !== undefined && envIp !== '' && isIP(envIp) === 0) {
    throw new ConfigError(`${MANAGEMENT_IP_ENV}: must be an IPv4 or IPv6 address, got ${JSON.stringify(envIp)}`);
  }
  const manage = {
    ip: args.manageIp ?? (envIp || undefined) ?? server.managementIpAddress ?? server.ipAddress ?? DEFAULT_MANAGE_IP,
    port: args.managePort ?? server.managementPort ?? server.port ?? DEFAULT_MANAGE_PORT,
  };
  const allowAllZero = server.allowAllZeroIpListening ?? false;
  refuseAllInterfaces('management address', manage.ip, allowAllZero, ALLOW_ALL_ZERO_KEY);
  const pd = file.pdlink ?? {};
  const base = pd.link_base_port ?? DEFAULT_LINK_BASE_PORT;
  const wanted = pd.devices ?? [{ device_logical_id: 0, device_ip: server.ipAddress ?? DEFAULT_SERVER_IP }];
  if (pd.cluster_id !== undefined && wanted.length !== 1) {
    throw new ConfigError(`config ${source}: pdlink.cluster_id: only allowed with exactly one device; give each device its own cluster_id`);
  }
  const seen = new Set<number>();
  const devices = wanted.map((d, i): DeviceSettings => {
    const logicalId = Number(d.device_logical_id);
    if (seen.has(logicalId)) throw new ConfigError(`config ${source}: pdlink.devices[${i}].device_logical_id: duplicate ${logicalId}`);
    seen.add(logicalId);
    refuseAllInterfaces(`config ${source}: pdlink.devices[${i}].device_ip`, d.device_ip, allowAllZero, ALLOW_ALL_ZERO_KEY);
    const port = base + logicalId;
    if (port > 65535) throw new ConfigError(`config ${source}: pdlink.devices[${i}]: link port ${base} + ${logicalId} exceeds 65535`);
    const explicit = d.cluster_id ?? pd.cluster_id;
    return {
      endpoint: String(logicalId),
      logicalId,
      ip: d.device_ip,
      port,
      clusterId: explicit === undefined ? clusterIdFor(d.device_ip, port) : BigInt(explicit),
    };
  });
  const ids = new Set(devices.map((d) => d.clusterId));
  if (ids.size !== devices.length) throw new ConfigError(`config ${source}: pdlink.devices: two devices share a cluster id`);
  const p = pd.pool ?? {};
  const pool: PoolSettings = {
    ...(p.threads === undefined ? {} : { threads: p.threads }),
    ...(p.batch_window_ms === undefined ? {} : { batchWindowMs: p.batch_window_ms }),
    ...(p.max_batch === undefined ? {} : { maxBatch: p.max_batch }),
    ...(p.encoding === undefined ? {} : { encoding: p.encoding }),
    ...(p.link_threads === undefined ? {} : { linkThreads: p.link_threads }),
  };
  const t = pd.transfers ?? {};
  const transfers: TransferSettings = {
    ...(t.threads === undefined ? {} : { threads: t.threads }),
    ...(t.same_host_fastpath === undefined ? {} : { sameHostFastpath: t.same_host_fastpath }),
    ...(t.chunk_mib === undefined ? {} : { chunkBytes: t.chunk_mib * 1024 * 1024 }),
    ...(t.parallel_slices === undefined ? {} : { parallelSlices: t.parallel_slices }),
  };
  const lp = pd.link_port ?? {};
  const linkPort: LinkPortLimits = {
    ...(lp.handshake_timeout_ms === undefined ? {} : { handshakeTimeoutMs: lp.handshake_timeout_ms }),
    ...(lp.idle_timeout_ms === undefined ? {} : { idleTimeoutMs: lp.idle_timeout_ms }),
    ...(lp.max_links === undefined ? {} : { maxLinks: lp.max_links }),
    ...(lp.max_links_per_peer === undefined ? {} : { maxLinksPerPeer: lp.max_links_per_peer }),
    ...(lp.max_handshakes === undefined ? {} : { maxHandshakes: lp.max_handshakes }),
    ...(lp.max_handshakes_per_peer === undefined ? {} : { maxHandshakesPerPeer: lp.max_handshakes_per_peer }),
    ...(lp.max_conns_per_peer === undefined ? {} : { maxConnsPerPeer: lp.max_conns_per_peer }),
    ...(lp.max_conns === undefined ? {} : { maxConns: lp.max_conns }),
  };
  const linkSecret = readLinkSecret(pd.auth?.link_secret_file, env);
  const security: ContextSecurity = { linkPort, ...(linkSecret === undefined ? {} : { linkSecret }) };
  const managementToken = readManagementToken(pd.auth?.management_token_file, env);
  const management: ManagementSecurity = {
    maxConnections: pd.http?.max_connections ?? DEFAULT_MAX_CONNECTIONS,
    ...(managementToken === undefined ? {} : { managementToken }),
    ...(pd.allowed_instance_networks === undefined ? {} : { allowedNetworks: pd.allowed_instance_networks }),
  };
  return {
    manage,
    devices,
    pool,
    transfers,
    linkBasePort: base,
    allowAllZeroIp: allowAllZero,
    security,
    management,
    tls: instanceTlsOf(pd.tls),
  };
}

/**
 * The agent options these settings stand for, shared by `pdlink instance` and `pdlink sim-engine`.
 * @example const agent = await createInstanceAgent({ ...agentOptionsOf(settings), processMetrics: true });
 */
export function agentOptionsOf(settings: InstanceSettings) {
  return {
    devices: settings.devices,
    linkBasePort: settings.linkBasePort,
    transfers: settings.transfers,
    security: settings.security,
    ...(settings.management.managementToken === undefined ? {} : { managementToken: settings.management.managementToken }),
    addressPolicy: new InstanceAddressPolicy(settings.management.allowedNetworks),
    ...settings.pool,
  };
}
