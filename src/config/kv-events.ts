/**
 * Resolves what the Coordinator file says about routing on the engines' KV state
 * (`scheduler.kv_events`, `scheduler.precise_prefix`, `scheduler.conditional_disaggregation.decode_first`)
 * into the options of apps/coordinator-kv.ts.
 */
import type { CoordinatorConfigFile } from '../schema/coordinator-config.ts';

/** `scheduler.kv_events`, `scheduler.precise_prefix` and decode-first, as resolved from the file. */
export interface CoordinatorKvOptions {
  /** XXH3 seed of the block keys (Mooncake's S), as (hi, lo). */
  readonly seed?: { readonly hi: number; readonly lo: number };
  readonly maxBlocks?: number;
  readonly maxBatchBytes?: number;
  readonly replayTimeoutMs?: number;
  readonly loadWeight?: number;
  readonly decodeFirst?: boolean;
  /** Model name → directory of its tokenizer.json (and tokenizer_config.json). */
  readonly tokenizers?: Readonly<Record<string, string>>;
}

/**
 * The KV options of a checked Coordinator file.
 * @example createCoordinator({ ..., kv: kvOptionsOf(settings.file) });
 */
export function kvOptionsOf(file: CoordinatorConfigFile): CoordinatorKvOptions {
  const s = file.scheduler;
  const events = s?.kv_events ?? {};
  const seed = events.seed === undefined ? undefined : BigInt(events.seed);
  return {
    ...(seed === undefined ? {} : { seed: { hi: Number((seed >> 32n) & 0xffffffffn), lo: Number(seed & 0xffffffffn) } }),
    ...(events.max_blocks === undefined ? {} : { maxBlocks: events.max_blocks }),
    ...(events.max_batch_bytes === undefined ? {} : { maxBatchBytes: events.max_batch_bytes }),
    ...(events.replay_timeout_ms === undefined ? {} : { replayTimeoutMs: events.replay_timeout_ms }),
    ...(s?.precise_prefix?.load_weight === undefined ? {} : { loadWeight: s.precise_prefix.load_weight }),
    ...(s?.conditional_disaggregation?.decode_first === undefined ? {} : { decodeFirst: s.conditional_disaggregation.decode_first }),
    ...(s?.tokenizers === undefined ? {} : { tokenizers: s.tokenizers }),
  };
}
