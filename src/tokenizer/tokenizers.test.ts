import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeWordTokenizer } from '../sim/engine/model/word-tokenizer.ts';
import { ModelTokenizer } from './model-tokenizer.ts';
import { Tokenizers } from './tokenizers.ts';

const root = mkdtempSync(join(tmpdir(), 'pdlink-tokenizer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const dir = writeWordTokenizer(join(root, 'words'));

describe('ModelTokenizer over a tokenizer.json the test wrote', () => {
  const tokenizer = ModelTokenizer.load(dir);
  // Ids: [UNK] 0, <s> 1, <|im_start|> 2, <|im_end|> 3, user 4, assistant 5, system 6, aaa 7, aab 8, …
  const word = (w: string): number => 7 + [...w].reduce((n, c) => n * 26 + c.charCodeAt(0) - 97, 0);

  test('text gets the BOS the tokenizer adds, one id per word, unknown words as [UNK]', () => {
    expect(tokenizer.text(' abc aab zzz')).toEqual([1, word('abc'), 8, word('zzz')]);
    expect(tokenizer.text('abc Hello!')).toEqual([1, word('abc'), 0]);
  });

  test('a chat is the template rendered with the generation prompt, with no second BOS', () => {
    const ids = tokenizer.chat([
      { role: 'system', content: 'abc' },
      { role: 'user', content: [{ type: 'text', text: 'aab' }] },
    ]);
    expect(ids).toEqual([2, 6, word('abc'), 3, 2, 4, 8, 3, 2, 5]);
    expect(tokenizer.chats).toBe(true);
  });

  test('a missing or broken file is named', () => {
    expect(() => ModelTokenizer.load(join(root, 'nothing'))).toThrow(join(root, 'nothing', 'tokenizer.json'));
    const broken = join(root, 'broken');
    writeWordTokenizer(broken);
    writeFileSync(join(broken, 'tokenizer_config.json'), '{');
    expect(() => ModelTokenizer.load(broken)).toThrow('tokenizer_config.json');
  });
});

describe('Tokenizers', () => {
  test('prompts by kind: text and chats tokenized, ids and batches left alone', () => {
    const tokenizers = new Tokenizers({ m: dir });
    expect(tokenizers.prompt('completions', { model: 'm', prompt: 'abc' })).toEqual([1, 7 + 28]);
    expect(tokenizers.prompt('completions', { model: 'm', prompt: ['abc'] })).toEqual([1, 7 + 28]);
    expect(tokenizers.prompt('completions', { model: 'm', prompt: ['abc', 'abd'] })).toBeUndefined();
    expect(tokenizers.prompt('completions', { model: 'm', prompt: [1, 2] })).toBeUndefined();
    expect(tokenizers.prompt('chat', { model: 'm', messages: [{ role: 'user', content: 'abc' }] })).toEqual([2, 4, 35, 3, 2, 5]);
    expect(tokenizers.tokenized).toBe(3);
  });

  test('a model without a tokenizer, or with unreadable files, gets none, said once', () => {
    const lines: string[] = [];
    const tokenizers = new Tokenizers({ bad: join(root, 'nothing') }, (line) => lines.push(line));
    expect(tokenizers.prompt('completions', { model: 'other', prompt: 'abc' })).toBeUndefined();
    expect(tokenizers.prompt('completions', { model: 'other', prompt: 'abc' })).toBeUndefined();
    expect(tokenizers.prompt('completions', { model: 'bad', prompt: 'abc' })).toBeUndefined();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('no tokenizer for model "other"');
    expect(lines[1]).toContain('cannot be loaded');
  });

  test('a template that refuses the messages is counted, and the prompt is left to the estimate', () => {
    const odd = join(root, 'odd');
    writeWordTokenizer(odd);
    writeFileSync(join(odd, 'tokenizer_config.json'), JSON.stringify({ chat_template: "{{ raise_exception('no system messages') }}" }));
    const tokenizers = new Tokenizers({ m: odd });
    expect(tokenizers.prompt('chat', { model: 'm', messages: [{ role: 'system', content: 'abc' }] })).toBeUndefined();
    expect(tokenizers.failed).toBe(1);
  });
});
