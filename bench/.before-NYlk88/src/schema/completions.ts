/**
 * Just enough validation of OpenAI-style inference requests for the proxy to route them: the
 * fields the proxy reads or rewrites are checked, every other field passes through untouched
 * (the engines validate the rest and answer for it).
 */
import * as v from 'valibot';
import { errors } from '../core/errors.ts';
import { parseOrRefuse } from './issues.ts';

/** The two inference APIs the proxy serves. */
export type CompletionKind = 'completions' | 'chat';

/** OpenAI allows `null` for both; the engines read it as "not given". */
const maxTokens = v.nullish(
  v.custom<number>((value) => typeof value === 'number' && Number.isSafeInteger(value) && value > 0, 'must be a positive integer'),
);
const stream = v.nullish(v.boolean('must be a boolean'));
const model = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'));

/** `prompt` as OpenAI defines it: a string, or an array (of strings, of token ids, of token-id arrays). */
const prompt = v.union([v.string(), v.array(v.unknown())], 'must be a string or an array');

const CompletionsRequest = v.looseObject(
  {
    model,
    prompt,
    stream,
    max_tokens: maxTokens,
  },
  'must be a JSON object',
);

const ChatRequest = v.looseObject(
  {
    model,
    messages: v.pipe(v.array(v.unknown(), 'must be an array of messages'), v.minLength(1, 'must not be empty')),
    stream,
    max_tokens: maxTokens,
  },
  'must be a JSON object',
);

/** A request body that passed the proxy's checks; the original object, unknown fields included. */
export type CompletionBody = Record<string, unknown> & { model: string; stream?: boolean | null; max_tokens?: number | null };

/**
 * Checks a parsed body for `kind`, throwing a 400 PdlinkError that names every offending field.
 * @example const body = parseCompletionBody('chat', await readJsonBody(c, { limitBytes }));
 */
export function parseCompletionBody(kind: CompletionKind, body: unknown): CompletionBody {
  // Valibot's object schemas accept arrays; a request body must be a plain JSON object.
  parseOrRefuse(kind === 'chat' ? ChatRequest : CompletionsRequest, body, errors.invalidBody, { object: true });
  // The original object, not Valibot's copy: fields the proxy does not know keep their exact
  // values, including UnsafeInteger markers that serialise back to their source digits.
  return body as CompletionBody;
}

/**
 * Serialises a request body for an engine, writing integers beyond 2^53−1 with their original digits.
 * @example const text = stringifyBody({ ...body, max_tokens: 1 });
 */
export function stringifyBody(body: Readonly<Record<string, unknown>>): string {
  // UnsafeInteger markers write their own digits (exact-json.ts); no replacer is needed.
  return JSON.stringify(body);
}
