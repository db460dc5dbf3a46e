/**
 * Reused SharedArrayBuffer-backed byte buffers. A prefill hands its KV bytes to a worker in shared
 * memory (no copy on the way), but allocating a fresh SharedArrayBuffer per request costs more
 * than filling it (a sixth of a simulated prefill's CPU time in a profile): buffers are kept by
 * power-of-two size and lent out again.
 */

/** Buffers kept per size class; more are dropped when returned. */
const KEPT_PER_SIZE = 64;

export class SharedScratch {
  readonly #free = new Map<number, SharedArrayBuffer[]>();

  /**
   * A view of exactly `bytes` bytes over a shared buffer (contents unspecified); give it back with `release`.
   * @example const data = scratch.take(4 * 4096); try { ... } finally { scratch.release(data); }
   */
  take(bytes: number): Uint8Array {
    const size = sizeClass(bytes);
    const buffer = this.#free.get(size)?.pop() ?? new SharedArrayBuffer(size);
    return new Uint8Array(buffer, 0, bytes);
  }

  /**
   * Returns a view from `take`; the caller must not use it afterwards.
   * @example scratch.release(data);
   */
  release(view: Uint8Array): void {
    const buffer = view.buffer;
    if (!(buffer instanceof SharedArrayBuffer) || buffer.byteLength !== sizeClass(buffer.byteLength)) return;
    let list = this.#free.get(buffer.byteLength);
    if (list === undefined) {
      list = [];
      this.#free.set(buffer.byteLength, list);
    }
    if (list.length < KEPT_PER_SIZE) list.push(buffer);
  }
}

function sizeClass(bytes: number): number {
  return bytes <= 64 ? 64 : 2 ** Math.ceil(Math.log2(bytes));
}
