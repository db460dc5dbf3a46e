/**
 * The simulated engine's reading of an OpenAI-style request: the prompt as tokens, how many
 * tokens to generate, streaming, and what `kv_transfer_params` asks of the KV cache (keep it for a
 * remote decoder, load it from a remote prefiller, or nothing).
 */
import * as v from 'valibot';
import { parseOrRefuse } from '../../../schema/issues.ts';
import { SimError } from '../http/sim-error.ts';
import { chatTemplate, tokenize, VOCAB_SIZE, type ChatMessage } from '../model/tokens.ts';

export type SimKind = 'completions' | 'chat';

/** What the request asks of the KV cache. */
export type KvIntent =
  | { readonly kind: 'none' }
  /** Prefill leg: compute the prompt, keep its blocks for a remote decoder. */
  | { readonly kind: 'export' }
  /** Decode leg: pull the prompt's blocks from the prefiller named here. */
  | {
      readonly kind: 'import';
      readonly blockIds: readonly number[];
      readonly engineId: bigint;
      readonly remoteRequestId: string;
      readonly host: string;
      readonly port: number;
    };

export interface SimRequest {
  readonly kind: SimKind;
  readonly model: string;
  readonly tokens: readonly number[];
  readonly maxTokens: number;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly kv: KvIntent;
}

/** vLLM's default when a request names no length. */
export const DEFAULT_MAX_TOKENS = 16;

const PositiveInt = v.pipe(v.number('must be an integer'), v.safeInteger('must be an integer'), v.minValue(1, 'must be ≥ 1'));
const TokenId = v.pipe(
  v.number('must be a token id'),
  v.integer('must be a token id'),
  v.minValue(0, 'must be ≥ 0'),
  v.maxValue(VOCAB_SIZE - 1, `must be < ${VOCAB_SIZE}`),
);
const Common = {
  model: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
  max_tokens: v.nullish(PositiveInt),
  max_completion_tokens: v.nullish(PositiveInt),
  stream: v.nullish(v.boolean('must be a boolean')),
  stream_options: v.nullish(v.looseObject({ include_usage: v.nullish(v.boolean('must be a boolean')) })),
  n: v.nullish(v.literal(1, 'the simulator generates one choice (n = 1)')),
  kv_transfer_params: v.nullish(v.looseObject({}, 'must be an object')),
};
const Prompt = v.union(
  [v.string(), v.pipe(v.array(v.string()), v.length(1)), v.array(TokenId), v.pipe(v.array(v.array(TokenId)), v.length(1))],
  'must be a string or a token-id list (one prompt per request)',
);
const Part = v.looseObject({ type: v.optional(v.string()), text: v.optional(v.string()) });
const Message = v.looseObject({
  role: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
  content: v.nullish(v.union([v.string(), v.array(Part)], 'must be a string or an array of content parts')),
});
const CompletionsBody = v.looseObject({ ...Common, prompt: Prompt }, 'must be a JSON object');
const ChatBody = v.looseObject(
  { ...Common, messages: v.pipe(v.array(Message, 'must be an array'), v.minLength(1, 'must not be empty')) },
  'must be a JSON object',
);

const ImportParams = v.looseObject({
  do_remote_prefill: v.literal(true),
  remote_block_ids: v.array(
    v.pipe(
      v.number('must be a block id'),
      v.integer('must be a block id'),
      v.minValue(0, 'must be ≥ 0'),
      v.maxValue(0xffffffff, 'must be < 2^32'),
    ),
  ),
  remote_engine_id: v.union(
    [v.pipe(v.string(), v.regex(/^\d{1,20}$/)), v.pipe(v.number(), v.safeInteger(), v.minValue(0))],
    'must be a cluster id (decimal string or integer)',
  ),
  remote_request_id: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
  remote_host: v.pipe(v.string('must be a host'), v.minLength(1, 'must not be empty')),
  remote_port: v.pipe(
    v.number('must be a port'),
    v.integer('must be a port'),
    v.minValue(1, 'must be a port'),
    v.maxValue(65535, 'must be a port'),
  ),
});

/**
 * Validates a parsed body for `kind` and reads it; throws a 400 SimError naming the fields.
 * @example const req = readSimRequest('completions', { model: 'sim', prompt: 'hi', max_tokens: 4 });
 */
/** A model's own tokenizer (tokenizer/model-tokenizer.ts), used instead of the simulator's stand-in when given. */
export interface SimTokenizer {
  text(text: string): number[];
  chat(messages: readonly ChatMessage[]): number[];
}

export function readSimRequest(kind: SimKind, body: unknown, tokenizer?: SimTokenizer): SimRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw SimError.badRequest('request body must be a JSON object', null);
  const out = kind === 'chat' ? parseOrRefuse(ChatBody, body, SimError.invalid) : parseOrRefuse(CompletionsBody, body, SimError.invalid);
  let tokens: number[];
  const text = (t: string): number[] => (tokenizer === undefined ? tokenize(t) : tokenizer.text(t));
  if ('messages' in out)
    tokens =
      tokenizer === undefined ? tokenize(chatTemplate(out.messages as ChatMessage[])) : tokenizer.chat(out.messages as ChatMessage[]);
  else {
    const prompt = (out as v.InferOutput<typeof CompletionsBody>).prompt;
    if (typeof prompt === 'string') tokens = text(prompt);
    else if (prompt.length > 0 && typeof prompt[0] === 'string') tokens = text(prompt[0]);
    else if (prompt.length > 0 && Array.isArray(prompt[0])) tokens = prompt[0];
    else tokens = prompt as number[];
  }
  if (tokens.length === 0) throw SimError.badRequest('prompt: must not be empty', kind === 'chat' ? 'messages' : 'prompt');
  return {
    kind,
    model: out.model,
    tokens,
    maxTokens: out.max_completion_tokens ?? out.max_tokens ?? DEFAULT_MAX_TOKENS,
    stream: out.stream === true,
    includeUsage: out.stream_options?.include_usage === true,
    kv: kvIntent(out.kv_transfer_params ?? undefined),
  };
}

function kvIntent(params: Record<string, unknown> | undefined): KvIntent {
  if (params === undefined) return { kind: 'none' };
  if (params['do_remote_decode'] === true) return { kind: 'export' };
  if (params['do_remote_prefill'] !== true) return { kind: 'none' };
  const p = parseOrRefuse(ImportParams, params, SimError.invalid, { at: 'kv_transfer_params' });
  return {
    kind: 'import',
    blockIds: p.remote_block_ids,
    engineId: BigInt(p.remote_engine_id),
    remoteRequestId: p.remote_request_id,
    host: p.remote_host,
    port: p.remote_port,
  };
}
