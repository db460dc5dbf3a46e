/**
 * The bodies of Mooncake Conductor's Indexer API (its indexer-api-design.md), which the
 * Coordinator serves on its management listener: `/register`, `/unregister`, `/query` and
 * `/query_by_hash`. Wire names are Mooncake's (`modelname`, `additionalsalt`, `instance_id`…).
 */
import * as v from 'valibot';

/** Most token ids in one query, and sequence hashes in one query_by_hash. */
export const MAX_QUERY_TOKENS = 1 << 20;
export const MAX_QUERY_HASHES = 1 << 16;

const text = (what: string) =>
  v.pipe(v.string(`must be ${what}`), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must be at most 256 characters'));
const optionalText = v.optional(v.pipe(v.string('must be a string'), v.maxLength(256, 'must be at most 256 characters')));
const BlockSize = v.pipe(
  v.number('must be an integer'),
  v.integer('must be an integer'),
  v.minValue(1, 'must be in [1, 4096]'),
  v.maxValue(4096, 'must be in [1, 4096]'),
);
const DpRank = v.pipe(
  v.number('must be an integer'),
  v.integer('must be an integer'),
  v.minValue(0, 'must be in [0, 1023]'),
  v.maxValue(1023, 'must be in [0, 1023]'),
);
/** `tcp://HOST:PORT` (zmtp/endpoint.ts reads it; this is the same shape, checked at the door). */
const Endpoint = v.pipe(
  v.string('must be a tcp://HOST:PORT endpoint'),
  v.maxLength(300, 'must be at most 300 characters'),
  v.regex(/^tcp:\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]]+):\d{1,5}$/, 'must be a tcp://HOST:PORT endpoint'),
  v.check(
    (text) => Number(text.slice(text.lastIndexOf(':') + 1)) >= 1 && Number(text.slice(text.lastIndexOf(':') + 1)) <= 65535,
    'port must be in [1, 65535]',
  ),
);
/** Publishers whose events carry token ids in vLLM's frames (SGLang copies them). */
export const PUBLISHER_TYPES = ['vLLM', 'SGLang'] as const;

export const RegisterBody = v.object({
  endpoint: Endpoint,
  replay_endpoint: v.optional(Endpoint),
  type: v.picklist(PUBLISHER_TYPES, `must be one of ${PUBLISHER_TYPES.join(', ')}`),
  modelname: text('the model name'),
  lora_name: optionalText,
  tenant_id: optionalText,
  instance_id: text('the instance id'),
  block_size: BlockSize,
  dp_rank: DpRank,
  additionalsalt: optionalText,
});
export type RegisterBody = v.InferOutput<typeof RegisterBody>;

export const UnregisterBody = v.object({
  type: v.optional(v.picklist(PUBLISHER_TYPES, `must be one of ${PUBLISHER_TYPES.join(', ')}`)),
  modelname: v.optional(text('the model name')),
  lora_name: optionalText,
  tenant_id: optionalText,
  instance_id: text('the instance id'),
  block_size: v.optional(BlockSize),
  dp_rank: DpRank,
});
export type UnregisterBody = v.InferOutput<typeof UnregisterBody>;

const TokenId = v.pipe(
  v.number('must be a token id'),
  v.integer('must be a token id'),
  v.minValue(0, 'must be in [0, 4294967295]'),
  v.maxValue(0xffffffff, 'must be in [0, 4294967295]'),
);
const Scope = {
  model: text('the model name'),
  lora_name: optionalText,
  lora_id: v.optional(v.nullable(v.number('must be a number'))),
  tenant_id: optionalText,
  instance_id: optionalText,
  block_size: BlockSize,
  cache_salt: optionalText,
};

export const QueryBody = v.pipe(
  v.object({
    ...Scope,
    token_ids: v.pipe(
      v.array(TokenId, 'must be an array of token ids'),
      v.maxLength(MAX_QUERY_TOKENS, `must hold at most ${MAX_QUERY_TOKENS} ids`),
    ),
  }),
  v.check(
    (b) => !(b.lora_id !== undefined && b.lora_id !== null && b.lora_name !== undefined),
    'lora_id and lora_name cannot both be given',
  ),
);
export type QueryBody = v.InferOutput<typeof QueryBody>;

/** A 64-bit sequence hash: an integer up to 2^53, or its decimal (or 0x-hex) string for any u64. */
const SEQ_HASH_TEXT = /^(\d{1,20}|0x[0-9a-fA-F]{1,16})$/;
const SeqHash = v.union(
  [
    v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
    // One check: a pipe runs every action, and BigInt() throws on text the regex would refuse.
    v.pipe(
      v.string(),
      v.check((s) => SEQ_HASH_TEXT.test(s) && BigInt(s) < 1n << 64n),
    ),
  ],
  'must be an integer below 2^64 (a decimal or 0x string past 2^53)',
);
const Hashes = v.pipe(
  v.array(SeqHash, 'must be an array of sequence hashes'),
  v.maxLength(MAX_QUERY_HASHES, `must hold at most ${MAX_QUERY_HASHES} hashes`),
);

export const QueryByHashBody = v.pipe(
  v.object({ ...Scope, seq_hashes: v.optional(Hashes), block_hash: v.optional(Hashes) }),
  v.check((b) => (b.seq_hashes === undefined) !== (b.block_hash === undefined), 'give seq_hashes (or block_hash), exactly one of them'),
);
export type QueryByHashBody = v.InferOutput<typeof QueryByHashBody>;
