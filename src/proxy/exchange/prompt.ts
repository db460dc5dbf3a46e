/**
 * What the proxy knows of a prompt before any engine sees it: its text or token ids (for the
 * scheduler) and its length in tokens (for the KV reservation).
 *
 * Token ids give an exact count. For text, the count is an estimate, because tokenizers live in
 * the engines: one token per 3 UTF-8 bytes. BPE tokenizers average about 4 bytes per token on
 * English text and about 3 on CJK text, so the estimate errs towards reserving a little more than
 * the prompt needs, never far less. Chat adds a per-message allowance for the chat template.
 */
import type { CompletionKind } from '../../schema/completions.ts';

/** UTF-8 bytes per token assumed for text. */
export const BYTES_PER_TOKEN = 3;
/**
 * UTF-8 bytes per token no tokenizer in use averages over a whole prompt (English text is about 4):
 * what makes a text prompt's fewest possible tokens, for refusing one no instance can hold.
 */
export const MAX_BYTES_PER_TOKEN = 16;
/** Tokens a chat template adds around each message (role markers, separators). */
export const CHAT_TOKENS_PER_MESSAGE = 8;

export interface PromptInfo {
  /** The prompt text (several texts joined by newlines), when the prompt is text. */
  readonly text?: string;
  /** The token ids, when the client sent a single tokenised prompt. */
  readonly tokens?: readonly number[];
  /** Prompt length in tokens: exact for token ids, else the estimate described above. */
  readonly tokenCount: number;
  readonly estimated: boolean;
  /** Fewest tokens the prompt can be: tokenCount when exact, else its bytes over MAX_BYTES_PER_TOKEN. */
  readonly fewestTokens: number;
}

/**
 * Extracts the prompt of a validated request body.
 * @example promptOf('completions', { model: 'm', prompt: [1, 2, 3] }).tokenCount // 3
 */
export function promptOf(kind: CompletionKind, body: Readonly<Record<string, unknown>>): PromptInfo {
  if (kind === 'chat') return chatPrompt(Array.isArray(body['messages']) ? body['messages'] : []);
  const prompt = body['prompt'];
  if (typeof prompt === 'string') return textPrompt([prompt], 0);
  if (!Array.isArray(prompt)) return { text: '', tokenCount: 0, estimated: true, fewestTokens: 0 };
  if (prompt.every((t) => typeof t === 'number')) {
    return { tokens: prompt as number[], tokenCount: prompt.length, estimated: false, fewestTokens: prompt.length };
  }
  if (prompt.every(Array.isArray)) {
    // A batch of tokenised prompts: the engine runs them all, so all count.
    const count = (prompt as unknown[][]).reduce((sum, p) => sum + p.length, 0);
    return { tokenCount: count, estimated: false, fewestTokens: count };
  }
  return textPrompt(
    prompt.filter((p): p is string => typeof p === 'string'),
    0,
  );
}

/**
 * The prompt with the token ids the model's tokenizer gave (an exact count); as it was without them.
 * @example tokenizedPrompt(promptOf('chat', body), tokenizers.prompt('chat', body))
 */
export function tokenizedPrompt(info: PromptInfo, tokens: readonly number[] | undefined): PromptInfo {
  if (tokens === undefined || info.tokens !== undefined) return info;
  return {
    ...(info.text === undefined ? {} : { text: info.text }),
    tokens,
    tokenCount: tokens.length,
    estimated: false,
    fewestTokens: tokens.length,
  };
}

/**
 * KV blocks a prompt of `tokens` tokens occupies at `blockSize` tokens per block.
 * @example blocksFor(129, 128) // 2
 */
export function blocksFor(tokens: number, blockSize: number): number {
  return Math.ceil(tokens / blockSize);
}

function chatPrompt(messages: readonly unknown[]): PromptInfo {
  const texts: string[] = [];
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const content = (message as { content?: unknown }).content;
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      // Content parts: only text parts have a length the proxy can estimate.
      for (const part of content) {
        const text = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
        if (typeof text === 'string') texts.push(text);
      }
    }
  }
  return textPrompt(texts, messages.length * CHAT_TOKENS_PER_MESSAGE);
}

function textPrompt(texts: readonly string[], extraTokens: number): PromptInfo {
  const text = texts.join('\n');
  const bytes = Buffer.byteLength(text, 'utf8');
  return {
    text,
    tokenCount: Math.ceil(bytes / BYTES_PER_TOKEN) + extraTokens,
    estimated: true,
    fewestTokens: Math.ceil(bytes / MAX_BYTES_PER_TOKEN),
  };
}
