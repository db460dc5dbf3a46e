/**
 * Prompt text generated from block hashes: each hash always becomes the same run of pseudo-words,
 * so two requests sharing leading hashes share a leading run of text — and, on a byte-counting
 * tokenizer such as the simulator's (four bytes a token), the same tokens and KV blocks. Each
 * pseudo-token is a space and three letters, four ASCII bytes.
 */
import { Random } from './random.ts';

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** Bytes of one generated pseudo-token. */
export const BYTES_PER_TOKEN = 4;

/**
 * The text of one block: `tokens` pseudo-tokens determined by `hash` alone.
 * @example blockText(7, 2) === blockText(7, 2) // true
 */
export function blockText(hash: number, tokens: number): string {
  const random = new Random((hash * 2654435761) ^ (hash / 4294967296));
  let text = '';
  for (let i = 0; i < tokens; i++) {
    text += ' ';
    for (let c = 0; c < 3; c++) text += LETTERS[Math.floor(random.next() * 26)];
  }
  return text;
}

/**
 * The prompt of `inputTokens` tokens built from the block hashes (cut in the last block; padded
 * with request-specific text when the hashes cover fewer tokens than asked).
 * @example promptText([1, 2], 3, 1000, 0).length // 4000
 */
export function promptText(hashIds: readonly number[], blockTokens: number, inputTokens: number, index: number): string {
  let text = '';
  for (const hash of hashIds) {
    if (text.length >= inputTokens * BYTES_PER_TOKEN) break;
    text += blockText(hash, blockTokens);
  }
  const missing = inputTokens - text.length / BYTES_PER_TOKEN;
  // Negative, so it never equals a trace's hash: padding is the request's own.
  if (missing > 0) text += blockText(-1 - index, missing);
  return text.slice(0, inputTokens * BYTES_PER_TOKEN);
}
