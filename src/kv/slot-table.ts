/**
 * An open-addressing table from a 96-bit key (three u32 words) to a non-negative int32 handle, for
 * the KV index: the keys live in the caller's own arrays (the table stores only handles), probing is
 * linear, deletion shifts the run back so no tombstones pile up, and the table doubles when half full.
 * Nothing is allocated per lookup; memory is 4 bytes per slot, at most 8 bytes per entry.
 */

/** What the table asks of its owner: the key words behind a handle. */
export interface SlotKeys {
  keyA(handle: number): number;
  keyB(handle: number): number;
  keyC(handle: number): number;
}

const EMPTY = -1;

/** A well-mixed slot index for three key words (a murmur-style finaliser over their combination). */
function mix(a: number, b: number, c: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b ^ 0xc2b2ae35, 0x27d4eb2f) ^ Math.imul(c + 0x165667b1, 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

export class SlotTable {
  #slots: Int32Array;
  #mask: number;
  #size = 0;
  readonly #keys: SlotKeys;

  constructor(keys: SlotKeys, initialSlots = 1024) {
    let n = 16;
    while (n < initialSlots) n *= 2;
    this.#slots = new Int32Array(n).fill(EMPTY);
    this.#mask = n - 1;
    this.#keys = keys;
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes the table holds. */
  get bytes(): number {
    return this.#slots.byteLength;
  }

  /**
   * The handle stored under the key, or -1.
   * @example const record = table.find(source, hashHi, hashLo);
   */
  find(a: number, b: number, c: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    const keys = this.#keys;
    for (let i = mix(a, b, c) & mask; ; i = (i + 1) & mask) {
      const h = slots[i]!;
      if (h === EMPTY) return EMPTY;
      if (keys.keyC(h) === c && keys.keyB(h) === b && keys.keyA(h) === a) return h;
    }
  }

  /**
   * Stores a handle whose key is not in the table yet (the caller checked with find()).
   * @example table.insert(record);
   */
  insert(handle: number): void {
    if (2 * (this.#size + 1) > this.#slots.length) this.#grow();
    this.#place(handle);
    this.#size++;
  }

  /**
   * Removes the handle stored under the key; returns whether it was there.
   * @example table.remove(source, hashHi, hashLo);
   */
  remove(a: number, b: number, c: number): boolean {
    const slots = this.#slots;
    const mask = this.#mask;
    const keys = this.#keys;
    let i = mix(a, b, c) & mask;
    for (; ; i = (i + 1) & mask) {
      const h = slots[i]!;
      if (h === EMPTY) return false;
      if (keys.keyC(h) === c && keys.keyB(h) === b && keys.keyA(h) === a) break;
    }
    // Backward-shift deletion: move later members of the run into the hole when their home allows.
    let hole = i;
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const h = slots[j]!;
      if (h === EMPTY) break;
      const home = mix(keys.keyA(h), keys.keyB(h), keys.keyC(h)) & mask;
      // h may move to the hole when its home is not in (hole, j] cyclically.
      if (hole <= j ? home <= hole || home > j : home <= hole && home > j) {
        slots[hole] = h;
        hole = j;
      }
    }
    slots[hole] = EMPTY;
    this.#size--;
    return true;
  }

  /** Forgets every entry (the slots keep their size). */
  clear(): void {
    this.#slots.fill(EMPTY);
    this.#size = 0;
  }

  #place(handle: number): void {
    const keys = this.#keys;
    const slots = this.#slots;
    const mask = this.#mask;
    let i = mix(keys.keyA(handle), keys.keyB(handle), keys.keyC(handle)) & mask;
    while (slots[i] !== EMPTY) i = (i + 1) & mask;
    slots[i] = handle;
  }

  #grow(): void {
    const old = this.#slots;
    this.#slots = new Int32Array(old.length * 2).fill(EMPTY);
    this.#mask = this.#slots.length - 1;
    for (let i = 0; i < old.length; i++) if (old[i] !== EMPTY) this.#place(old[i]!);
  }
}
