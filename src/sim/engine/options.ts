/**
 * What `pdlink sim-engine` is started with: the engine simulator's role and model, where its two
 * listeners are, the simulated KV cache's geometry and the simulated compute speed, and their
 * defaults. cli/sim-engine-options.ts reads them from the command line.
 */
import type { SimRole } from './types.ts';

export interface SimEngineArgs {
  help: boolean;
  role: SimRole;
  model: string;
  config?: string;
  manageIp?: string;
  managePort?: number;
  ip?: string;
  port?: number;
  numBlocks: number;
  blockBytes: number;
  blockTokens: number;
  prefillMsPerToken: number;
  decodeMsPerToken: number;
  decodeBatchSlowdown: number;
  prefixCacheBlocks?: number;
  maxModelLen: number;
  kvLeaseMs: number;
  pullTimeoutMs: number;
  roleSwitchMs: number;
  protocol: 'vllm' | 'sglang';
  kvEventsPort?: number;
  kvEventsReplayPort?: number;
  kvEventsEncoding: 'array' | 'map';
  kvEventsHashes: 'int' | 'bytes';
  tokenizer?: string;
}

/** Defaults of the simulated engine's numeric options. */
export const SIM_DEFAULTS = {
  model: 'pdlink-sim',
  numBlocks: 1024,
  blockBytes: 16_384,
  blockTokens: 16,
  prefillMsPerToken: 0.1,
  decodeMsPerToken: 10,
  decodeBatchSlowdown: 0.05,
  maxModelLen: 4096,
  kvLeaseMs: 30_000,
  pullTimeoutMs: 1000,
  roleSwitchMs: 1000,
  protocol: 'vllm',
  kvEventsEncoding: 'array',
  kvEventsHashes: 'int',
} as const;
