/**
 * A small real tokenizer for the simulator and the benchmarks: files in Hugging Face's format
 * (tokenizer.json with a WordPiece model whose every word is whole, a BOS template; a
 * tokenizer_config.json with a ChatML chat template), whose words are the bench harness's
 * pseudo-words (three lowercase letters, prompt-text.ts), so one pseudo-word is one token as the
 * harness assumes. The Coordinator (scheduler.tokenizers) and the simulated engines (--tokenizer)
 * load the same files through @huggingface/tokenizers, as they would a model's.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SPECIALS = ['[UNK]', '<s>', '<|im_start|>', '<|im_end|>'] as const;
const WORDS = ['user', 'assistant', 'system'];
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** ChatML, as many models' tokenizer_config.json spell it. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/**
 * The files' contents: tokenizer.json and tokenizer_config.json.
 * @example const { tokenizer, config } = wordTokenizerFiles();
 */
export function wordTokenizerFiles(): { tokenizer: Record<string, unknown>; config: Record<string, unknown> } {
  const vocab: Record<string, number> = {};
  let id = 0;
  for (const s of SPECIALS) vocab[s] = id++;
  for (const w of WORDS) vocab[w] = id++;
  for (const a of LETTERS) for (const b of LETTERS) for (const c of LETTERS) vocab[a + b + c] = id++;
  const added = SPECIALS.map((content, i) => ({
    id: i,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'WhitespaceSplit' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
  const config = {
    bos_token: '<s>',
    eos_token: '<|im_end|>',
    unk_token: '[UNK]',
    chat_template: CHATML_TEMPLATE,
    model_max_length: 1 << 20,
  };
  return { tokenizer, config };
}

/**
 * Writes the files into `dir` (made when missing); returns `dir`.
 * @example const dir = writeWordTokenizer(join(clusterDir, 'tokenizer'));
 */
export function writeWordTokenizer(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const { tokenizer, config } = wordTokenizerFiles();
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  return dir;
}
