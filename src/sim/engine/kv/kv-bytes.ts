/**
 * The simulated KV cache contents: block k of a prompt holds bytes that depend only on the
 * prompt's hash and k. P writes them into its registered blocks; D, after pulling, recomputes them
 * from its own tokenisation of the same prompt and compares byte for byte, so a transfer that
 * moved the wrong block, a stale block or corrupted bytes is caught without D knowing P's memory.
 */
import { xorshift, type PromptHash } from '../model/tokens.ts';

/**
 * Fills `into` (one block) with the bytes of block `k` of the prompt.
 * @example fillBlock(hash, 0, new Uint8Array(4096))
 */
export function fillBlock(hash: PromptHash, k: number, into: Uint8Array): void {
  const next = xorshift(hash, k);
  const words = into.byteLength >>> 2;
  // Aligned views write four bytes per step; the block's own offset may not be aligned.
  if ((into.byteOffset & 3) === 0) {
    const view = new Uint32Array(into.buffer, into.byteOffset, words);
    for (let i = 0; i < words; i++) view[i] = next();
  } else {
    for (let i = 0; i < words; i++) writeWord(into, i << 2, next());
  }
  const tail = into.byteLength & 3;
  if (tail > 0) {
    const last = next();
    for (let j = 0; j < tail; j++) into[(words << 2) + j] = (last >>> (8 * j)) & 0xff;
  }
}

/**
 * The bytes of `blocks` consecutive blocks starting at block `first`, `blockBytes` each, in a new
 * buffer or in `into` (a SharedArrayBuffer-backed one crosses to a worker without a copy).
 * @example const data = promptBlocks(hash, 0, 3, 4096); // 12288 bytes
 */
export function promptBlocks(hash: PromptHash, first: number, blocks: number, blockBytes: number, into?: Uint8Array): Uint8Array {
  const data = into ?? new Uint8Array(blocks * blockBytes);
  if (data.byteLength < blocks * blockBytes) throw new RangeError(`into holds ${data.byteLength} bytes, ${blocks * blockBytes} needed`);
  for (let k = 0; k < blocks; k++) fillBlock(hash, first + k, data.subarray(k * blockBytes, (k + 1) * blockBytes));
  return data;
}

/** Where a pulled block first differs from what the prompt should hold. */
export interface KvMismatch {
  /** Index of the block within the prompt. */
  readonly block: number;
  /** Byte offset inside that block. */
  readonly offset: number;
  readonly expected: number;
  readonly actual: number;
}

/**
 * Compares pulled blocks (block after block, `blockBytes` each, prompt blocks `first`…) with what
 * the prompt should hold; undefined when every byte matches.
 * @example const bad = verifyBlocks(hash, 0, pulled, 4096); if (bad) throw new Error(`block ${bad.block} differs`);
 */
export function verifyBlocks(hash: PromptHash, first: number, data: Uint8Array, blockBytes: number): KvMismatch | undefined {
  const expected = new Uint8Array(blockBytes);
  const blocks = Math.floor(data.byteLength / blockBytes);
  for (let k = 0; k < blocks; k++) {
    fillBlock(hash, first + k, expected);
    const actual = data.subarray(k * blockBytes, (k + 1) * blockBytes);
    if (Buffer.compare(expected, actual) === 0) continue;
    for (let i = 0; i < blockBytes; i++) {
      if (expected[i] !== actual[i]) return { block: first + k, offset: i, expected: expected[i]!, actual: actual[i]! };
    }
  }
  return undefined;
}

function writeWord(into: Uint8Array, at: number, word: number): void {
  into[at] = word & 0xff;
  into[at + 1] = (word >>> 8) & 0xff;
  into[at + 2] = (word >>> 16) & 0xff;
  into[at + 3] = (word >>> 24) & 0xff;
}
