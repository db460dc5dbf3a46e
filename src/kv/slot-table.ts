/**
 * An open-addressing table from a 96-bit key (three u32 words) to a handle below 2^27, for the KV
 * index: the keys live in the caller's own arrays and the table stores only handles, each with four
 * bits of its key's hash beside it in the same int32, so a probe that passes another key is told
 * apart there without reading that key (a cache miss into a large array) fifteen times in sixteen.
 * Probing is linear, deletion shifts the run back so no tombstones pile up, and the table grows by
 * half when half full, so it holds 8 to 12 bytes per entry (4 per slot). Its size need not be a
 * power of two: a key's home slot is its hash scaled to the table. Nothing is allocated per lookup.
 */

/** What the table asks of its owner: the key words behind a handle. */
export interface SlotKeys {
  keyA(handle: number): number;
  keyB(handle: number): number;
  keyC(handle: number): number;
}

const EMPTY = -1;
/** Handles take the low 27 bits of a slot, the hash's tag the four above (the sign bit stays 0). */
export const MAX_HANDLE = (1 << 27) - 1;
const TAG_SHIFT = 27;

/** A well-mixed hash of three key words (a murmur-style finaliser over their combination). */
function mix(a: number, b: number, c: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b ^ 0xc2b2ae35, 0x27d4eb2f) ^ Math.imul(c + 0x165667b1, 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

/** The home slot: the hash's top 25 bits, times the slot count, over 2^25 (exact up to 2^28 slots). */
const INV_2_25 = 1 / 33554432;
/** Most slots a table grows to. */
const MAX_SLOTS = 1 << 28;

function home(hash: number, slots: number): number {
  return Math.floor((hash >>> 7) * slots * INV_2_25);
}

/** The hash's low four bits, in place above the handle. */
function tagOf(hash: number): number {
  return (hash & 15) << TAG_SHIFT;
}

export class SlotTable {
  #slots: Int32Array;
  #size = 0;
  readonly #keys: SlotKeys;

  constructor(keys: SlotKeys, initialSlots = 1024) {
    this.#slots = new Int32Array(Math.max(16, initialSlots)).fill(EMPTY);
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
    const n = slots.length;
    const keys = this.#keys;
    const hash = mix(a, b, c);
    const tag = tagOf(hash);
    for (let i = home(hash, n); ; i = i + 1 === n ? 0 : i + 1) {
      const s = slots[i]!;
      if (s === EMPTY) return EMPTY;
      if ((s & ~MAX_HANDLE) !== tag) continue;
      const h = s & MAX_HANDLE;
      if (keys.keyC(h) === c && keys.keyB(h) === b && keys.keyA(h) === a) return h;
    }
  }

  /**
   * Stores a handle (at most MAX_HANDLE) whose key is not in the table yet (the caller checked with find()).
   * @throws RangeError when the handle is out of range or the table is full (MAX_SLOTS).
   * @example table.insert(record);
   */
  insert(handle: number): void {
    if (handle < 0 || handle > MAX_HANDLE) throw new RangeError(`a slot table's handles are in [0, ${MAX_HANDLE}]`);
    if (2 * (this.#size + 1) > this.#slots.length) this.#grow();
    if (this.#size + 1 >= this.#slots.length) throw new RangeError(`a slot table holds fewer than ${MAX_SLOTS} entries`);
    this.#place(handle);
    this.#size++;
  }

  /**
   * Removes the handle stored under the key; returns whether it was there.
   * @example table.remove(source, hashHi, hashLo);
   */
  remove(a: number, b: number, c: number): boolean {
    const slots = this.#slots;
    const n = slots.length;
    const keys = this.#keys;
    const hash = mix(a, b, c);
    const tag = tagOf(hash);
    let i = home(hash, n);
    for (; ; i = i + 1 === n ? 0 : i + 1) {
      const s = slots[i]!;
      if (s === EMPTY) return false;
      if ((s & ~MAX_HANDLE) !== tag) continue;
      const h = s & MAX_HANDLE;
      if (keys.keyC(h) === c && keys.keyB(h) === b && keys.keyA(h) === a) break;
    }
    // Backward-shift deletion: move later members of the run into the hole when their home allows.
    let hole = i;
    for (let j = i + 1 === n ? 0 : i + 1; ; j = j + 1 === n ? 0 : j + 1) {
      const s = slots[j]!;
      if (s === EMPTY) break;
      const h = s & MAX_HANDLE;
      const at = home(mix(keys.keyA(h), keys.keyB(h), keys.keyC(h)), n);
      // It may move to the hole when its home is not in (hole, j] cyclically.
      if (hole <= j ? at <= hole || at > j : at <= hole && at > j) {
        slots[hole] = s;
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
    const n = slots.length;
    const hash = mix(keys.keyA(handle), keys.keyB(handle), keys.keyC(handle));
    let i = home(hash, n);
    while (slots[i] !== EMPTY) i = i + 1 === n ? 0 : i + 1;
    slots[i] = handle | tagOf(hash);
  }

  #grow(): void {
    const old = this.#slots;
    if (old.length >= MAX_SLOTS) return;
    this.#slots = new Int32Array(Math.min(MAX_SLOTS, Math.ceil(old.length * 1.5))).fill(EMPTY);
    for (let i = 0; i < old.length; i++) if (old[i] !== EMPTY) this.#place(old[i]! & MAX_HANDLE);
  }
}
