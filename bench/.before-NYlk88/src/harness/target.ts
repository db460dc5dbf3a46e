/**
 * The endpoint under test and the request body it gets: any OpenAI-compatible base URL,
 * `/v1/completions` or `/v1/chat/completions`, always streaming with usage, asking for exactly the
 * workload's completion length (`ignore_eos`, understood by vLLM and the simulator, ignored by
 * servers that do not know it).
 */

export type Endpoint = 'completions' | 'chat';

export interface Target {
  /** e.g. `http://127.0.0.1:1025`, without `/v1/...`. */
  readonly baseUrl: string;
  readonly endpoint: Endpoint;
  readonly model: string;
  /** Bound on one request, from send to the end of its stream. */
  readonly requestTimeoutMs: number;
}

/** Response headers pdlink's proxy adds naming the instances that served a request. */
export const PREFILL_HEADER = 'x-pdlink-prefill';
export const DECODE_HEADER = 'x-pdlink-decode';

/**
 * The URL of the endpoint.
 * @example endpointUrl({ baseUrl: 'http://h:1', endpoint: 'chat', ... }) // 'http://h:1/v1/chat/completions'
 */
export function endpointUrl(target: Target): string {
  return `${target.baseUrl.replace(/\/+$/, '')}/v1/${target.endpoint === 'chat' ? 'chat/completions' : 'completions'}`;
}

/**
 * The streamed request body for a prompt and completion length.
 * @example requestBody(target, 'hello', 16)
 */
export function requestBody(target: Target, prompt: string, maxTokens: number): Record<string, unknown> {
  const common = {
    model: target.model,
    max_tokens: maxTokens,
    min_tokens: maxTokens,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  };
  return target.endpoint === 'chat' ? { ...common, messages: [{ role: 'user', content: prompt }] } : { ...common, prompt };
}
