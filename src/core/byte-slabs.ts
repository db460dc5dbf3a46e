/**
 * Reused memory for encoding large request bodies. Touching memory for the first time costs more
 * than filling it on the virtual machines pdlink is run on: a fresh 4 MiB array took 12 ms here
 * (page faults, about 12 µs per 4 KiB page) where filling one already touched took 0.1 ms, and
 * encoding a 4 MiB leg into a fresh buffer held the event loop 26–29 ms. A few slabs, kept once
 * touched, make that encoding a copy.
 */

/** Slabs kept between uses, and the largest kept (a larger body gets memory of its own). */
const KEPT = 4;
const LARGEST_KEPT = 64 << 20;

export class ByteSlabs {
  readonly #free: Uint8Array[] = [];
  readonly #kept: number;
  readonly #largest: number;

  constructor(kept = KEPT, largest = LARGEST_KEPT) {
    this.#kept = kept;
    this.#largest = largest;
  }

  /**
   * A slab of at least `size` bytes (its contents are whatever it last held), for the caller alone
   * until it is given back.
   * @example const slab = slabs.take(Buffer.byteLength(text)); ...; slabs.give(slab);
   */
  take(size: number): Uint8Array {
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) {
      const length = this.#free[i]!.byteLength;
      if (length >= size && (best < 0 || length < this.#free[best]!.byteLength)) best = i;
    }
    if (best >= 0) return this.#free.splice(best, 1)[0]!;
    // Rounded up to a MiB, so bodies of about the same size share slabs.
    return new Uint8Array(Math.ceil(size / (1 << 20)) * (1 << 20));
  }

  /** Gives a slab back once nothing reads it any more; kept while few and not too large. */
  give(slab: Uint8Array): void {
    if (slab.byteLength > this.#largest || this.#free.includes(slab)) return;
    if (this.#free.length >= this.#kept) {
      // The smallest goes: the large ones are the costly ones to touch again.
      let smallest = 0;
      for (let i = 1; i < this.#free.length; i++) if (this.#free[i]!.byteLength < this.#free[smallest]!.byteLength) smallest = i;
      if (this.#free[smallest]!.byteLength >= slab.byteLength) return;
      this.#free.splice(smallest, 1);
    }
    this.#free.push(slab);
  }

  /** Bytes kept now. */
  get keptBytes(): number {
    return this.#free.reduce((n, s) => n + s.byteLength, 0);
  }
}
