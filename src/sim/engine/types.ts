/**
 * The shapes a simulated engine shares with its legs: its options, its devices, and the narrow view
 * each leg (prefill.ts, decode.ts, local.ts) has of the engine that runs it. They live apart from
 * engine.ts so that the legs import types downward and only the engine's callers import the engine.
 */
import type { ClientTlsOptions } from '../../platform/tls-options.ts';
import type { SimTokenizer } from './legs/request.ts';
import type { BlockPool } from './kv/block-pool.ts';
import type { FaultPlan } from './faults.ts';
import type { PrefixCache } from './kv/prefix-cache.ts';
import type { PrefillQueue } from './legs/prefill-queue.ts';
import type { SimKv } from './kv/kv-port.ts';
import type { ReleaseNotifier } from './kv/release-notifier.ts';
import type { RequestLog } from './request-log.ts';
import type { SharedScratch } from './kv/scratch.ts';

export type SimRole = 'prefill' | 'decode';

export interface SimDevice {
  /** Link manager endpoint (the logical device id as text). */
  readonly endpoint: string;
  readonly clusterId: bigint;
}

export interface SimEngineOptions {
  readonly role: SimRole;
  readonly model: string;
  readonly devices: readonly SimDevice[];
  readonly kv: SimKv;
  /** KV blocks registered per device. */
  readonly numBlocks: number;
  readonly blockBytes: number;
  /** Prompt tokens per KV block. */
  readonly blockTokens: number;
  readonly prefillMsPerToken: number;
  readonly decodeMsPerToken: number;
  /** Extra decode time per token for each other generating leg, as a fraction (timing.ts); default 0. */
  readonly decodeBatchSlowdown?: number;
  /** Blocks the prefix cache remembers (default: every KV block of every device). */
  readonly prefixCacheBlocks?: number;
  /** Longest prompt + completion, in tokens (vLLM's max_model_len). */
  readonly maxModelLen: number;
  /** How long a prefill keeps its blocks for a decoder that never says it is done. */
  readonly kvLeaseMs: number;
  /** Deadline of one pull (LLM-DataDist's sync_kv_timeout). */
  readonly pullTimeoutMs: number;
  /** What a role change costs: the time the engine serves nothing while it drops its KV cache (default 0). */
  readonly roleSwitchMs?: number;
  /** The PD protocol served (default vllm): SGLang's bootstrap rooms are sglang.ts. */
  readonly protocol?: 'vllm' | 'sglang';
  /** Kills the process (SIGKILL by default); the crash fault calls it. */
  readonly crash?: () => void;
  /** Tells a prefiller that its blocks of a request may be freed (default: the engine's ReleaseNotifier). */
  readonly notifyDone?: (host: string, port: number, remoteRequestId: string) => Promise<void>;
  /** The model's tokenizer (`--tokenizer`), instead of the simulator's four-bytes-a-token stand-in. */
  readonly tokenizer?: SimTokenizer;
  /** The client side of release notices when prefillers' management listeners require TLS. */
  readonly notifyTls?: ClientTlsOptions;
}

/** Where decoders reach this engine to free its blocks: the management listener. */
export interface KvNotifyAddress {
  readonly host: string;
  readonly port: number;
}

/** What a leg sees of its engine: the options, the pools and logs it writes, and the ids it draws. */
export interface LegEngine {
  readonly options: SimEngineOptions;
  readonly faults: FaultPlan;
  readonly log: RequestLog;
  readonly releases: ReleaseNotifier;
  readonly scratch: SharedScratch;
  readonly pools: ReadonlyMap<string, BlockPool>;
  readonly counters: { bytesPulled: number; blocksPulled: number; verifyFailures: number };
  readonly prefixCache: PrefixCache;
  /** Prefill compute, one prompt at a time (prefill-queue.ts). */
  readonly prefillQueue: PrefillQueue;
  /** Generating legs running now (the decode batch of timing.ts). */
  generating: number;
  readonly notifyAddress: KvNotifyAddress | undefined;
  /** The next device for a prefill (round robin). */
  nextDevice(): SimDevice;
  /** A request-unique key for the block pools. */
  nextId(requestId: string): string;
  /** Notes that a prefill's blocks live on `endpoint`, so a release finds them. */
  noteExported(prefillId: string, endpoint: string): void;
}
