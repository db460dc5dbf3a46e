/**
 * The Coordinator's tokenizers, one per model name (`scheduler.tokenizers`: model → directory),
 * loaded on first use and asked once per request for the prompt's token ids: a prompt given as ids
 * passes through; text and chats are tokenized as the engine will. A model without a tokenizer, or
 * whose files cannot be read, gets none, which is said once in the log; its requests are routed on
 * pdlink's own record of what each instance prefilled, as before.
 */
import { ModelTokenizer, type ChatMessage } from './model-tokenizer.ts';

export type PromptKind = 'completions' | 'chat';

export class Tokenizers {
  readonly #dirs: ReadonlyMap<string, string>;
  readonly #loaded = new Map<string, ModelTokenizer | undefined>();
  readonly #log: (line: string) => void;
  /** Prompts tokenized, and prompts that could not be (no tokenizer, a template error). */
  tokenized = 0;
  failed = 0;

  constructor(dirs: Readonly<Record<string, string>>, log: (line: string) => void = (line) => console.warn(line)) {
    this.#dirs = new Map(Object.entries(dirs));
    this.#log = log;
  }

  /**
   * The tokenizer of a model, or undefined (said once per model in the log).
   * @example tokenizers.of('qwen')?.text('hi')
   */
  of(model: string): ModelTokenizer | undefined {
    if (this.#loaded.has(model)) return this.#loaded.get(model);
    const dir = this.#dirs.get(model);
    let tokenizer: ModelTokenizer | undefined;
    if (dir === undefined)
      this.#log(`pdlink: no tokenizer for model ${JSON.stringify(model)}: its text prompts are routed on pdlink's own prefix record`);
    else {
      try {
        tokenizer = ModelTokenizer.load(dir);
      } catch (err) {
        this.#log(
          `pdlink: the tokenizer of model ${JSON.stringify(model)} cannot be loaded (${err instanceof Error ? err.message : String(err)}): its text prompts are routed on pdlink's own prefix record`,
        );
      }
    }
    this.#loaded.set(model, tokenizer);
    return tokenizer;
  }

  /**
   * The token ids of a request's prompt (a completion's single text, or a chat), or undefined when
   * it has none to give (ids given already, several prompts, no tokenizer, a failure).
   * @example const tokens = tokenizers.prompt('chat', body);
   */
  prompt(kind: PromptKind, body: Readonly<Record<string, unknown>>): number[] | undefined {
    const model = body['model'];
    if (typeof model !== 'string') return undefined;
    const text = kind === 'completions' ? singleText(body['prompt']) : undefined;
    if (kind === 'completions' && text === undefined) return undefined;
    const tokenizer = this.of(model);
    if (tokenizer === undefined) return undefined;
    try {
      const ids = kind === 'chat' ? tokenizer.chat(messagesOf(body), templateArgs(body)) : tokenizer.text(text!);
      this.tokenized++;
      return ids;
    } catch {
      this.failed++;
      return undefined;
    }
  }
}

function singleText(prompt: unknown): string | undefined {
  if (typeof prompt === 'string') return prompt;
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === 'string') return prompt[0];
  return undefined;
}

function messagesOf(body: Readonly<Record<string, unknown>>): ChatMessage[] {
  const messages = body['messages'];
  return Array.isArray(messages) ? (messages.filter((m) => typeof m === 'object' && m !== null) as ChatMessage[]) : [];
}

/** vLLM's `chat_template_kwargs` reach the template too. */
function templateArgs(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const extra = body['chat_template_kwargs'];
  return typeof extra === 'object' && extra !== null && !Array.isArray(extra) ? (extra as Record<string, unknown>) : {};
}
