/**
 * Bodies of the instance agent's `/v1/kv/*` routes: cache registration, local block writes and
 * reads, and pulls/pushes over a link. Ids are exact uint64 bigints, block lists come out as
 * Uint32Arrays, and a bad index is reported with its path (`src_blocks[3]`).
 */
import { INT32_MAX } from '../core/limits.ts';
import * as v from 'valibot';
import { ClusterIdSchema, LocalIpInfoSchema } from './links.ts';

/** Blocks per list in one request: 256 Ki blocks keep a body under ~6 MiB of JSON. */
export const MAX_BLOCKS_PER_REQUEST = 256 * 1024;
/** Bytes one write or read may carry (base64 in JSON): these routes serve tests and simulators, not bulk data. */
export const MAX_COPY_BYTES = 16 * 1024 * 1024;
/** LLM-DataDist's `sync_kv_timeout` default, in ms. */
export const DEFAULT_KV_TIMEOUT_MS = 1000;
export const MAX_KV_TIMEOUT_MS = INT32_MAX;
/** Index issues reported per list; a hostile list of a million bad items gets the first few. */
const MAX_LIST_ISSUES = 10;
const MAX_U32 = 0xffffffff;

/** uint64 as a JSON number (exact) or a decimal string; the same rule as cluster ids. */
export const CacheIdSchema = ClusterIdSchema;

const isU32 = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= MAX_U32;

/** A non-empty array of block indices (integers in [0, 2^32-1]) → Uint32Array. */
export const BlockListSchema = v.pipe(
  v.array(v.unknown(), 'must be an array of block indices'),
  v.minLength(1, 'must list at least one block'),
  v.maxLength(MAX_BLOCKS_PER_REQUEST, `must list at most ${MAX_BLOCKS_PER_REQUEST} blocks`),
  v.rawCheck(({ dataset, addIssue }) => {
    // A list already refused by its length is not worth walking.
    if (!dataset.typed || dataset.issues !== undefined) return;
    const list = dataset.value;
    let reported = 0;
    for (let i = 0; i < list.length && reported < MAX_LIST_ISSUES; i++) {
      if (isU32(list[i])) continue;
      addIssue({
        message: `must be an integer in [0, ${MAX_U32}]`,
        path: [{ type: 'array', origin: 'value', input: list, key: i, value: list[i] }],
      });
      reported++;
    }
  }),
  v.transform((list) => Uint32Array.from(list as number[])),
);

const U32Positive = (what: string) =>
  v.pipe(
    v.number(`must be an integer number of ${what}`),
    v.integer(`must be an integer number of ${what}`),
    v.minValue(1, 'must be > 0'),
    v.maxValue(MAX_U32, `must be at most ${MAX_U32}`),
  );

const TimeoutSchema = v.optional(
  v.pipe(
    v.number('must be an integer number of milliseconds'),
    v.integer('must be an integer number of milliseconds'),
    v.minValue(1, 'must be > 0'),
    v.maxValue(MAX_KV_TIMEOUT_MS, `must be at most ${MAX_KV_TIMEOUT_MS} (int32)`),
  ),
  DEFAULT_KV_TIMEOUT_MS,
);

/** `local_ip_info` picks the local device by its address, as on `/v1/links/*`. */
const Local = { local_ip_info: v.optional(LocalIpInfoSchema) };

// Valibot's object schema takes arrays for objects; a top-level array is off-spec as a whole.
const jsonObject = () =>
  v.custom<Record<string, unknown>>(
    (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
    'must be a JSON object',
  );

/** Adds an issue on `dst_blocks` when the two lists differ in length. */
function sameLength<T extends { readonly src_blocks: Uint32Array; readonly dst_blocks: Uint32Array }>() {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { src_blocks: src, dst_blocks: dst } = dataset.value;
    if (src.length === dst.length) return;
    addIssue({
      message: `must list as many blocks as src_blocks (${src.length}), got ${dst.length}`,
      path: [{ type: 'object', origin: 'value', input: dataset.value, key: 'dst_blocks', value: dst }],
    });
  });
}

/** Body of `POST /v1/kv/caches`. */
export const RegisterCacheSchema = v.pipe(
  jsonObject(),
  v.object({ cache_id: CacheIdSchema, num_blocks: U32Positive('blocks'), block_bytes: U32Positive('bytes'), ...Local }),
);

const PullObject = v.object({
  remote_cluster_id: ClusterIdSchema,
  remote_cache_id: CacheIdSchema,
  src_blocks: BlockListSchema,
  dst_cache_id: CacheIdSchema,
  dst_blocks: BlockListSchema,
  timeout: TimeoutSchema,
  ...Local,
});

/** Body of `POST /v1/kv/pull`: the peer's `src_blocks` of `remote_cache_id` → our `dst_blocks` of `dst_cache_id`. */
export const PullSchema = v.pipe(jsonObject(), v.pipe(PullObject, sameLength<v.InferOutput<typeof PullObject>>()));

const PushObject = v.object({
  remote_cluster_id: ClusterIdSchema,
  src_cache_id: CacheIdSchema,
  src_blocks: BlockListSchema,
  remote_cache_id: CacheIdSchema,
  dst_blocks: BlockListSchema,
  timeout: TimeoutSchema,
  ...Local,
});

/** Body of `POST /v1/kv/push`: our `src_blocks` of `src_cache_id` → the peer's `dst_blocks` of `remote_cache_id`. */
export const PushSchema = v.pipe(jsonObject(), v.pipe(PushObject, sameLength<v.InferOutput<typeof PushObject>>()));

const Base64Schema = v.pipe(
  v.string('must be a base64 string'),
  v.regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be standard base64 (A-Z, a-z, 0-9, +, /, = padding)'),
  v.check((s) => s.length % 4 === 0, 'must be standard base64 with padding (a length divisible by 4)'),
);

/** Body of `POST /v1/kv/write`: `data` holds blocks.length × block_bytes bytes, block after block. */
export const WriteBlocksSchema = v.pipe(
  jsonObject(),
  v.object({ cache_id: CacheIdSchema, blocks: BlockListSchema, data: Base64Schema, ...Local }),
);

/** Body of `POST /v1/kv/read`. */
export const ReadBlocksSchema = v.pipe(jsonObject(), v.object({ cache_id: CacheIdSchema, blocks: BlockListSchema, ...Local }));

export type RegisterCacheBody = v.InferOutput<typeof RegisterCacheSchema>;
export type PullBody = v.InferOutput<typeof PullSchema>;
export type PushBody = v.InferOutput<typeof PushSchema>;
