/**
 * The OpenAI response shapes a simulated engine answers with, for completions and chat, whole
 * (JSON) and streamed (SSE `data:` events ending with `data: [DONE]`), as vLLM's server writes them.
 */
import type { SimKind } from '../legs/request.ts';

export interface AnswerHead {
  readonly kind: SimKind;
  /** `cmpl-…` or `chatcmpl-…`, from the request id. */
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/**
 * The head shared by every chunk of one answer.
 * @example const head = answerHead('chat', 'req-1', 'sim-model');
 */
export function answerHead(kind: SimKind, requestId: string, model: string): AnswerHead {
  return { kind, id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${requestId}`, created: Math.floor(Date.now() / 1000), model };
}

/**
 * Usage counts of an answer.
 * @example usage(12, 4).total_tokens // 16
 */
export function usage(promptTokens: number, completionTokens: number): Usage {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

/**
 * A whole (non-streamed) answer; `kvTransferParams` is added when the engine has some for the caller.
 * @example JSON.stringify(wholeAnswer(head, ' a b', 'length', usage(3, 2)))
 */
export function wholeAnswer(
  head: AnswerHead,
  text: string,
  finishReason: string,
  counts: Usage,
  kvTransferParams?: Record<string, unknown>,
): Record<string, unknown> {
  const choice =
    head.kind === 'chat'
      ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finishReason }
      : { index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null };
  const answer: Record<string, unknown> = {
    id: head.id,
    object: head.kind === 'chat' ? 'chat.completion' : 'text_completion',
    created: head.created,
    model: head.model,
    choices: [choice],
    usage: counts,
  };
  if (kvTransferParams !== undefined) answer['kv_transfer_params'] = kvTransferParams;
  return answer;
}

const encoder = new TextEncoder();

/**
 * One SSE event carrying a JSON object.
 * @example controller.enqueue(sseEvent({ ... }))
 */
export function sseEvent(payload: unknown): Uint8Array {
  return encoder.encode(sseText(payload));
}

/**
 * The text of one SSE event carrying a JSON object.
 * @example body += sseText({ ... })
 */
export function sseText(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/** The event that ends every stream. */
export const SSE_DONE = encoder.encode('data: [DONE]\n\n');

/**
 * The chat stream's opening chunk (the assistant role, empty content); completions have none.
 * @example if (head.kind === 'chat') controller.enqueue(sseEvent(roleChunk(head)));
 */
export function roleChunk(head: AnswerHead): Record<string, unknown> {
  return chunk(head, [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
}

/**
 * The chunk of one generated piece; the last one carries the finish reason.
 * @example sseEvent(tokenChunk(head, ' word', null))
 */
export function tokenChunk(head: AnswerHead, piece: string, finishReason: string | null): Record<string, unknown> {
  const choice =
    head.kind === 'chat'
      ? { index: 0, delta: { content: piece }, logprobs: null, finish_reason: finishReason }
      : { index: 0, text: piece, logprobs: null, finish_reason: finishReason, stop_reason: null };
  return chunk(head, [choice]);
}

/**
 * The usage chunk sent when `stream_options.include_usage` asks for it: no choices, the counts.
 * @example sseEvent(usageChunk(head, usage(3, 2)))
 */
export function usageChunk(head: AnswerHead, counts: Usage): Record<string, unknown> {
  return { ...chunk(head, []), usage: counts };
}

function chunk(head: AnswerHead, choices: unknown[]): Record<string, unknown> {
  return {
    id: head.id,
    object: head.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created: head.created,
    model: head.model,
    choices,
  };
}
