/**
 * P computed the prompt, so the prompt's logprobs are in P's answer, not D's: when the client
 * asks for them (`return_logprob`), P's `meta_info.input_token_logprobs` go in front of D's, as
 * SGLang's router does. A batched answer (a JSON array) is merged item by item.
 */

type Json = Record<string, unknown>;

/**
 * D's answer with P's prompt logprobs merged in; D's answer unchanged when either side has none.
 * @example mergePromptLogprobs(pAnswer, dAnswer)
 */
export function mergePromptLogprobs(p: unknown, d: unknown): unknown {
  if (Array.isArray(p) && Array.isArray(d)) return d.map((item, i) => mergeOne(p[i], item));
  return mergeOne(p, d);
}

function mergeOne(p: unknown, d: unknown): unknown {
  const pLogprobs = inputLogprobs(p);
  const dMeta = metaOf(d);
  if (pLogprobs === undefined || dMeta === undefined) return d;
  const dLogprobs = Array.isArray(dMeta['input_token_logprobs']) ? (dMeta['input_token_logprobs'] as unknown[]) : [];
  return { ...(d as Json), meta_info: { ...dMeta, input_token_logprobs: [...pLogprobs, ...dLogprobs] } };
}

function metaOf(answer: unknown): Json | undefined {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return undefined;
  const meta = (answer as Json)['meta_info'];
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Json) : undefined;
}

function inputLogprobs(answer: unknown): unknown[] | undefined {
  const logprobs = metaOf(answer)?.['input_token_logprobs'];
  return Array.isArray(logprobs) ? logprobs : undefined;
}
