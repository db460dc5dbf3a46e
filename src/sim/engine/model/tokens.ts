/**
 * The engine simulator's tokenizer and "model": deterministic stand-ins, so a test can compute
 * what a simulated engine must answer without running one.
 *
 * Text becomes tokens four UTF-8 bytes at a time (real BPE tokenizers average about four bytes per
 * token on English text), each token id a hash of its bytes. A chat request is first rendered
 * through a fixed template. The generated text of a prompt is a pseudo-random walk over a small
 * vocabulary seeded by the prompt's hash, so P's one token and D's stream agree with each other
 * and with `generatedText` here.
 */

/** Size of the simulated vocabulary (token ids are in [0, VOCAB_SIZE)). */
export const VOCAB_SIZE = 32_000;
/** UTF-8 bytes per token of text. */
export const BYTES_PER_SIM_TOKEN = 4;

const WORDS = [
  'the',
  'cache',
  'block',
  'link',
  'prefill',
  'decode',
  'token',
  'stream',
  'device',
  'cluster',
  'engine',
  'request',
  'bytes',
  'pull',
  'lease',
  'pair',
  'route',
  'answer',
  'model',
  'prompt',
  'ready',
  'role',
  'peer',
  'kv',
  'fast',
  'small',
  'warm',
  'quiet',
  'bright',
  'steady',
  'river',
  'stone',
] as const;

const encoder = new TextEncoder();

/** A prompt's 64-bit fingerprint as two unsigned 32-bit halves (exact in JavaScript numbers). */
export interface PromptHash {
  readonly hi: number;
  readonly lo: number;
}

/**
 * Token ids of a text, four UTF-8 bytes per token (the last token may hold fewer).
 * @example tokenize('hello world').length // 3
 */
export function tokenize(text: string): number[] {
  const bytes = encoder.encode(text);
  const ids: number[] = [];
  for (let start = 0; start < bytes.length; start += BYTES_PER_SIM_TOKEN) {
    let h = 0x811c9dc5;
    const end = Math.min(bytes.length, start + BYTES_PER_SIM_TOKEN);
    for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
    ids.push((h >>> 0) % VOCAB_SIZE);
  }
  return ids;
}

/** One chat message as the simulator's template reads it. */
export interface ChatMessage {
  readonly role: string;
  /** Text, or OpenAI content parts of which the text parts count. */
  readonly content: string | readonly { readonly type?: string; readonly text?: string }[] | null;
}

/**
 * The prompt text of a chat: `<|role|>\ncontent\n` per message, then the assistant's opening.
 * @example chatTemplate([{ role: 'user', content: 'hi' }]) // '<|user|>\nhi\n<|assistant|>\n'
 */
export function chatTemplate(messages: readonly ChatMessage[]): string {
  let text = '';
  for (const m of messages) {
    const content =
      typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
    text += `<|${m.role}|>\n${content}\n`;
  }
  return `${text}<|assistant|>\n`;
}

/**
 * The 64-bit FNV-1a hash of a token list (each id as four little-endian bytes), in two halves.
 * @example promptHash([1, 2, 3]).lo
 */
export function promptHash(tokens: readonly number[]): PromptHash {
  // 64-bit FNV-1a on two 32-bit lanes: multiply by the prime 2^40 + 0x1b3 with carries by hand.
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (const id of tokens) {
    for (let shift = 0; shift < 32; shift += 8) {
      lo = (lo ^ ((id >>> shift) & 0xff)) >>> 0;
      const loTimesPrime = lo * 0x1b3;
      const carry = Math.floor(loTimesPrime / 0x1_0000_0000);
      const newLo = loTimesPrime >>> 0;
      hi = (Math.imul(hi, 0x1b3) + carry + (lo << 8)) >>> 0;
      lo = newLo;
    }
  }
  return { hi, lo };
}

/**
 * The hash as 16 hex digits, for logs and request records.
 * @example hashHex(promptHash([])) // 'cbf29ce484222325'
 */
export function hashHex(hash: PromptHash): string {
  return hash.hi.toString(16).padStart(8, '0') + hash.lo.toString(16).padStart(8, '0');
}

/**
 * A xorshift32 generator seeded from a hash and a salt; never seeded with 0 (a fixed point).
 * @example const next = xorshift(hash, 7); next(); next();
 */
export function xorshift(hash: PromptHash, salt: number): () => number {
  // xorshift is linear: seeds are mixed non-linearly first, or two prompts' streams would differ
  // by one constant XOR mask and could pick the same words everywhere.
  let x = fmix32((hash.lo + fmix32((hash.hi ^ Math.imul(salt + 1, 0x9e3779b1)) >>> 0)) >>> 0);
  if (x === 0) x = 0x6d2b79f5;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/**
 * The text of generated token `index` of a prompt: a space and a word.
 * @example generatedToken(promptHash(tokenize('hi')), 0) // ' cache' (for example)
 */
export function generatedToken(hash: PromptHash, index: number): string {
  const next = xorshift(hash, 0x40000000 + index);
  return ` ${WORDS[fmix32(next()) % WORDS.length]}`;
}

/** MurmurHash3's 32-bit finaliser: every input bit reaches every output bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The first `count` generated tokens of a prompt, as text pieces.
 * @example generatedTokens(promptHash(tokenize('hi')), 3).join('')
 */
export function generatedTokens(hash: PromptHash, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(generatedToken(hash, i));
  return out;
}

/**
 * KV blocks that `tokens` prompt tokens occupy at `blockTokens` tokens per block.
 * @example blocksNeeded(33, 16) // 3
 */
export function blocksNeeded(tokens: number, blockTokens: number): number {
  return Math.ceil(tokens / blockTokens);
}
