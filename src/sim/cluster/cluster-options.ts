/**
 * What a simulated cluster is asked for and what it hands back: the options of `SimCluster.start`,
 * the engine settings every simulated engine shares (with defaults small enough for tests on two
 * cores), the PEM files of a TLS cluster and the handle of one running engine. They live apart from
 * the launcher so the helpers that build processes' arguments and files can share them without
 * importing the class that uses those helpers.
 */
import type { EngineLayout } from './cluster-bodies.ts';
import type { SimEngineArgs } from '../engine/options.ts';
import type { ManagedProcess } from './process.ts';

/** The numeric engine options a cluster passes to every simulated engine (the CLI's own names). */
export type SimEngineSettings = Pick<
  SimEngineArgs,
  | 'numBlocks'
  | 'blockBytes'
  | 'blockTokens'
  | 'prefillMsPerToken'
  | 'decodeMsPerToken'
  | 'decodeBatchSlowdown'
  | 'prefixCacheBlocks'
  | 'maxModelLen'
  | 'kvLeaseMs'
  | 'pullTimeoutMs'
  | 'roleSwitchMs'
  | 'protocol'
  | 'kvEventsEncoding'
  | 'kvEventsHashes'
  | 'tokenizer'
>;

export interface SimClusterOptions {
  /** Engines publish their prefix cache's KV events (vLLM's ZeroMQ frames); refresh entries name the sockets. */
  readonly kvEvents?: boolean;
  readonly prefill: number;
  readonly decode: number;
  /** Devices per engine (default 1). */
  readonly devices?: number;
  readonly model?: string;
  /** Simulator settings of every engine (defaults: small and fast, see CLUSTER_ENGINE_DEFAULTS). */
  readonly engine?: Partial<SimEngineSettings>;
  /**
   * Runs the whole cluster over mutual TLS: every listener requires a client certificate of the CA,
   * the Coordinator's legs and every call of the cluster's own go over https with the client
   * certificate. Called with the cluster's addresses, for a server certificate that names them.
   */
  readonly tls?: (ips: readonly string[]) => SimClusterTls;
  /** The Coordinator's configuration file (ms_coordinator.json layout). */
  readonly coordinatorConfig?: Record<string, unknown>;
  /** Each output line of every process, prefixed with its name. */
  readonly onLine?: (line: string) => void;
  /** Upper bound of every start-up wait. */
  readonly deadlineMs?: number;
  /** Wire the cluster (roles, refresh) after start (default true); false leaves it to a controller. */
  readonly wire?: boolean;
  /**
   * File holding the cluster's management token (default: env PDLINK_MANAGEMENT_TOKEN_FILE): every
   * process is started with it and every call of the launcher sends it.
   */
  readonly managementTokenFile?: string;
  /** The platform (Bun or Deno) each kind of process runs on (default: the one running the launcher). */
  readonly platforms?: { readonly coordinator?: PlatformName; readonly engines?: PlatformName };
}

/** The platforms a pdlink process can run on. */
export type PlatformName = 'bun' | 'deno';

/** Engine settings of a launched cluster unless overridden: fast enough for tests on two cores. */
export const CLUSTER_ENGINE_DEFAULTS: SimEngineSettings = {
  numBlocks: 256,
  blockBytes: 4096,
  blockTokens: 16,
  prefillMsPerToken: 0,
  decodeMsPerToken: 1,
  decodeBatchSlowdown: 0,
  maxModelLen: 4096,
  kvLeaseMs: 30_000,
  pullTimeoutMs: 5_000,
  // A role change still drops the KV cache and refuses requests while it runs; tests need not wait for it.
  roleSwitchMs: 0,
  protocol: 'vllm',
  kvEventsEncoding: 'array',
  kvEventsHashes: 'int',
};

/** PEM file paths for a TLS cluster: one CA, one server certificate for every listener, one client certificate. */
export interface SimClusterTls {
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

export interface SimEngineHandle extends EngineLayout {
  process: ManagedProcess;
  readonly manageUrl: string;
  readonly inferenceUrl: string;
}

/** The KV-event sockets of an engine started with `kvEvents` (from its listening lines). */
export function kvEventsOf(process: ManagedProcess): { readonly endpoint: string; readonly replay: string } | undefined {
  const endpoint = process.urls['kv-events'];
  const replay = process.urls['kv-replay'];
  return endpoint === undefined || replay === undefined ? undefined : { endpoint, replay };
}
