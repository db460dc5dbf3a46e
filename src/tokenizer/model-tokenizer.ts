/**
 * One model's tokenizer, as the engines run it: its `tokenizer.json` through @huggingface/tokenizers
 * and, for chat, its chat template (tokenizer_config.json's `chat_template`, or a
 * `chat_template.jinja` beside it) through @huggingface/jinja, both maintained libraries in plain
 * JavaScript that run the same on Bun and Deno. vLLM's rules are kept: a completion's text is encoded
 * with the special tokens the tokenizer adds (BOS), a chat is rendered with the generation prompt
 * and encoded without adding them again (the template writes its own).
 */
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A chat message as OpenAI's API carries it (other fields, such as tool calls, reach the template as they are). */
export interface ChatMessage {
  readonly role: string;
  readonly content?: unknown;
}

export class ModelTokenizer {
  readonly #tokenizer: Tokenizer;
  readonly #template: Template | undefined;
  /** Values the template may read besides the messages (bos_token, eos_token, …). */
  readonly #specials: Record<string, string>;

  /**
   * Loads the tokenizer files of a model directory.
   * @throws Error naming the file when tokenizer.json is missing or either file cannot be read.
   * @example const tokenizer = ModelTokenizer.load('/models/qwen');
   */
  static load(dir: string): ModelTokenizer {
    const read = (name: string): unknown => {
      const path = join(dir, name);
      try {
        return JSON.parse(readFileSync(path, 'utf8'));
      } catch (err) {
        throw new Error(`${path}: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    const json = read('tokenizer.json');
    const config = (existsSync(join(dir, 'tokenizer_config.json')) ? read('tokenizer_config.json') : {}) as Record<string, unknown>;
    const templateFile = join(dir, 'chat_template.jinja');
    const template =
      typeof config['chat_template'] === 'string'
        ? config['chat_template']
        : existsSync(templateFile)
          ? readFileSync(templateFile, 'utf8')
          : undefined;
    return new ModelTokenizer(json, config, template);
  }

  constructor(json: unknown, config: Record<string, unknown>, template: string | undefined) {
    this.#tokenizer = new Tokenizer(json as object, config);
    this.#template = template === undefined ? undefined : new Template(template);
    this.#specials = {};
    for (const name of ['bos_token', 'eos_token', 'pad_token', 'unk_token']) {
      const v = config[name];
      const text = typeof v === 'string' ? v : typeof v === 'object' && v !== null ? (v as { content?: unknown }).content : undefined;
      if (typeof text === 'string') this.#specials[name] = text;
    }
  }

  /** Whether chats can be rendered (the model has a chat template). */
  get chats(): boolean {
    return this.#template !== undefined;
  }

  /**
   * Token ids of a completion's text, special tokens included as the tokenizer adds them.
   * @example tokenizer.text('Hello') // [1, 15043]
   */
  text(text: string): number[] {
    return this.#tokenizer.encode(text).ids;
  }

  /**
   * Token ids of a chat: the template rendered with the generation prompt, then encoded without
   * adding special tokens again.
   * @throws Error when the model has no chat template, or the template refuses the messages.
   * @example tokenizer.chat([{ role: 'user', content: 'Hi' }])
   */
  chat(messages: readonly ChatMessage[], extra: Readonly<Record<string, unknown>> = {}): number[] {
    if (this.#template === undefined) throw new Error('the model has no chat template');
    const rendered = this.#template.render({ ...this.#specials, ...extra, messages: messages.map(plainText), add_generation_prompt: true });
    return this.#tokenizer.encode(rendered, { add_special_tokens: false }).ids;
  }
}

/** A message whose content array is reduced to its text, as templates written for strings expect. */
function plainText(message: ChatMessage): ChatMessage {
  if (!Array.isArray(message.content)) return message;
  const text = message.content
    .map((part) =>
      typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string'
        ? (part as { text: string }).text
        : '',
    )
    .join('');
  return { ...message, content: text };
}
