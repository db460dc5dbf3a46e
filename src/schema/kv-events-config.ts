/**
 * The Coordinator file's `scheduler.kv_events` section: the seed of the index's block keys
 * (Mooncake's `S`, default 0; a decimal string for values past 2^53), the most blocks the index
 * holds, and the intake's bounds on one batch and one replay.
 */
import * as v from 'valibot';

const int = (min: number, max: number) =>
  v.pipe(
    v.number('must be an integer'),
    v.integer('must be an integer'),
    v.minValue(min, `must be in [${min}, ${max}]`),
    v.maxValue(max, `must be in [${min}, ${max}]`),
  );

export const KvEventsSection = v.looseObject({
  /** XXH3 seed of the block keys: an integer, or a decimal string for a full 64-bit value. */
  seed: v.optional(
    v.union(
      [
        int(0, Number.MAX_SAFE_INTEGER),
        v.pipe(
          v.string(),
          v.regex(/^\d{1,20}$/, 'must be a decimal integer'),
          v.check((text) => BigInt(text) < 1n << 64n, 'must be below 2^64'),
        ),
      ],
      'must be an integer in [0, 2^64)',
    ),
  ),
  /** Most held blocks (one per instance, medium and block) the index keeps; more are refused and counted. */
  max_blocks: v.optional(int(1024, 1 << 27)),
  /** Largest event batch read, in bytes; larger ones are skipped and counted. */
  max_batch_bytes: v.optional(int(1024, 1 << 30)),
  /** How long a replay request may take. */
  replay_timeout_ms: v.optional(int(1, 600_000)),
});

export type KvEventsSection = v.InferOutput<typeof KvEventsSection>;
