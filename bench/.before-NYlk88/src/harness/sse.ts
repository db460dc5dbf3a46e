/**
 * An incremental reader of server-sent events as OpenAI-compatible servers stream them: bytes in,
 * complete `data:` payloads out, across any chunking of the network.
 */

export class SseReader {
  readonly #decoder = new TextDecoder();
  #buffer = '';

  /**
   * Feeds bytes; returns the data payloads of the events they completed.
   * @example reader.push(bytes) // ['{"choices":[...]}', '[DONE]']
   */
  push(bytes: Uint8Array): string[] {
    this.#buffer += this.#decoder.decode(bytes, { stream: true }).replace(/\r\n?/g, '\n');
    const out: string[] = [];
    let end: number;
    while ((end = this.#buffer.indexOf('\n\n')) >= 0) {
      const event = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''));
      if (data.length > 0) out.push(data.join('\n'));
    }
    return out;
  }
}

/** What one streamed chunk carried. */
export interface ChunkContent {
  /** Generated text in this chunk (empty for role-only or usage-only chunks). */
  readonly text: string;
  /** `usage.completion_tokens` when the chunk carries usage. */
  readonly completionTokens: number | undefined;
  /** An error object the server streamed instead of tokens. */
  readonly error: string | undefined;
}

/**
 * Reads one `data:` payload of a completions or chat stream.
 * @example chunkContent('{"choices":[{"text":" a"}]}').text // ' a'
 */
export function chunkContent(data: string): ChunkContent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return { text: '', completionTokens: undefined, error: `unparsable stream event: ${data.slice(0, 80)}` };
  }
  const obj = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as {
    choices?: { text?: unknown; delta?: { content?: unknown } }[];
    usage?: { completion_tokens?: unknown } | null;
    error?: { message?: unknown } | string;
  };
  let text = '';
  for (const choice of Array.isArray(obj.choices) ? obj.choices : []) {
    if (typeof choice.text === 'string') text += choice.text;
    if (typeof choice.delta?.content === 'string') text += choice.delta.content;
  }
  const tokens = obj.usage?.completion_tokens;
  const error = obj.error === undefined ? undefined : typeof obj.error === 'string' ? obj.error : String(obj.error.message ?? 'error');
  return { text, completionTokens: typeof tokens === 'number' ? tokens : undefined, error };
}
