/**
 * A bounds-checked msgpack reader for one purpose: walking an engine's KV-event batch in place. The
 * general decoder (msgpackr) builds an object graph per batch and turns 64-bit integers into either
 * rounded numbers or BigInts; block hashes need all 64 bits and a batch can hold thousands of them,
 * so this reads values where they lie: integers as exact (hi, lo) halves, token ids straight into a
 * Uint32Array, anything unknown skipped without being built. Every read checks the remaining length
 * and throws KvDecodeError naming what was being read, so a truncated or hostile payload costs one
 * error, never a crash or an unbounded loop. events.test.ts checks it against msgpackr.
 */

/** A payload that is not the msgpack a KV-event batch should be. */
export class KvDecodeError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = 'KvDecodeError';
  }
}

/** What a msgpack value is, as far as the event decoder cares. */
export type MsgType = 'nil' | 'bool' | 'int' | 'float' | 'str' | 'bin' | 'array' | 'map' | 'ext';

const utf8 = new TextDecoder('utf-8', { fatal: false });
/** Data bytes of fixext1 … fixext16 (0xd4 … 0xd8). */
const FIXEXT_BYTES = [1, 2, 4, 8, 16];

export class MsgCursor {
  pos = 0;
  /** Result halves of the last readInt64(). */
  hi = 0;
  lo = 0;
  readonly #buf: Uint8Array;
  readonly #view: DataView;

  constructor(buf: Uint8Array) {
    this.#buf = buf;
    this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  get remaining(): number {
    return this.#buf.length - this.pos;
  }

  /** The type of the next value, without reading it. */
  peek(path: string): MsgType {
    this.#need(1, path);
    const c = this.#buf[this.pos]!;
    if (c <= 0x7f || c >= 0xe0) return 'int';
    if (c <= 0x8f) return 'map';
    if (c <= 0x9f) return 'array';
    if (c <= 0xbf) return 'str';
    switch (c) {
      case 0xc0:
        return 'nil';
      case 0xc2:
      case 0xc3:
        return 'bool';
      case 0xc4:
      case 0xc5:
      case 0xc6:
        return 'bin';
      case 0xca:
      case 0xcb:
        return 'float';
      case 0xd9:
      case 0xda:
      case 0xdb:
        return 'str';
      case 0xdc:
      case 0xdd:
        return 'array';
      case 0xde:
      case 0xdf:
        return 'map';
      case 0xc7:
      case 0xc8:
      case 0xc9:
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        return 'ext';
    }
    if (c >= 0xcc && c <= 0xd3) return 'int';
    throw new KvDecodeError(path, `byte 0x${c.toString(16)} at ${this.pos} starts no msgpack value`);
  }

  /** Reads nil if it is next; returns whether it was. */
  nil(): boolean {
    if (this.pos < this.#buf.length && this.#buf[this.pos] === 0xc0) {
      this.pos++;
      return true;
    }
    return false;
  }

  /** An array header: the element count. */
  arrayLength(path: string): number {
    const c = this.#byte(path);
    if (c >= 0x90 && c <= 0x9f) return c & 0x0f;
    if (c === 0xdc) return this.#u16(path);
    if (c === 0xdd) return this.#u32(path);
    throw this.#wrong(path, 'an array', c);
  }

  /** A map header: the pair count. */
  mapLength(path: string): number {
    const c = this.#byte(path);
    if (c >= 0x80 && c <= 0x8f) return c & 0x0f;
    if (c === 0xde) return this.#u16(path);
    if (c === 0xdf) return this.#u32(path);
    throw this.#wrong(path, 'a map', c);
  }

  /** A string. */
  str(path: string): string {
    const c = this.#byte(path);
    let n: number;
    if (c >= 0xa0 && c <= 0xbf) n = c & 0x1f;
    else if (c === 0xd9) n = this.#byte(path);
    else if (c === 0xda) n = this.#u16(path);
    else if (c === 0xdb) n = this.#u32(path);
    else throw this.#wrong(path, 'a string', c);
    this.#need(n, path);
    const s = utf8.decode(this.#buf.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }

  /** A binary value's bytes (a view into the payload). */
  bin(path: string): Uint8Array {
    const c = this.#byte(path);
    let n: number;
    if (c === 0xc4) n = this.#byte(path);
    else if (c === 0xc5) n = this.#u16(path);
    else if (c === 0xc6) n = this.#u32(path);
    else throw this.#wrong(path, 'bytes', c);
    this.#need(n, path);
    const b = this.#buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }

  /** A number (int or float) as a JS number; 64-bit integers beyond 2^53 are rounded. */
  number(path: string): number {
    const c = this.#buf[this.pos];
    if (c === 0xca) {
      this.pos++;
      this.#need(4, path);
      const v = this.#view.getFloat32(this.pos);
      this.pos += 4;
      return v;
    }
    if (c === 0xcb) {
      this.pos++;
      this.#need(8, path);
      const v = this.#view.getFloat64(this.pos);
      this.pos += 8;
      return v;
    }
    const signed = this.int64(path);
    return signed ? (this.hi | 0) * 4294967296 + this.lo : this.hi * 4294967296 + this.lo;
  }

  /**
   * An integer as its 64-bit two's-complement halves in `hi`, `lo`; returns true when it was a
   * signed encoding (negative fixint or int8…int64).
   */
  int64(path: string): boolean {
    const c = this.#byte(path);
    if (c <= 0x7f) return this.#set(0, c, false);
    if (c >= 0xe0) return this.#set(0xffffffff, (c - 256) >>> 0, true);
    switch (c) {
      case 0xcc:
        return this.#set(0, this.#byte(path), false);
      case 0xcd:
        return this.#set(0, this.#u16(path), false);
      case 0xce:
        return this.#set(0, this.#u32(path), false);
      case 0xcf: {
        const hi = this.#u32(path);
        return this.#set(hi, this.#u32(path), false);
      }
      case 0xd0: {
        const v = (this.#byte(path) << 24) >> 24;
        return this.#set(v < 0 ? 0xffffffff : 0, v >>> 0, true);
      }
      case 0xd1: {
        const v = (this.#u16(path) << 16) >> 16;
        return this.#set(v < 0 ? 0xffffffff : 0, v >>> 0, true);
      }
      case 0xd2: {
        const v = this.#u32(path) | 0;
        return this.#set(v < 0 ? 0xffffffff : 0, v >>> 0, true);
      }
      case 0xd3: {
        const hi = this.#u32(path);
        return this.#set(hi, this.#u32(path), true);
      }
    }
    throw this.#wrong(path, 'an integer', c);
  }

  /** An unsigned integer below 2^32 (a token id, a block size). */
  u32(path: string): number {
    this.int64(path);
    if (this.hi !== 0) throw new KvDecodeError(path, 'must be an integer in [0, 2^32)');
    return this.lo;
  }

  /** Skips one value of any type, nested ones included, with a bound on nesting. */
  skip(path: string, depth = 0): void {
    if (depth > 64) throw new KvDecodeError(path, 'nested deeper than 64 levels');
    const type = this.peek(path);
    switch (type) {
      case 'nil':
      case 'bool':
        this.pos++;
        return;
      case 'int':
        this.int64(path);
        return;
      case 'float':
        this.number(path);
        return;
      case 'str':
        this.str(path);
        return;
      case 'bin':
        this.bin(path);
        return;
      case 'array': {
        const n = this.arrayLength(path);
        for (let i = 0; i < n; i++) this.skip(path, depth + 1);
        return;
      }
      case 'map': {
        const n = this.mapLength(path);
        for (let i = 0; i < 2 * n; i++) this.skip(path, depth + 1);
        return;
      }
      case 'ext': {
        const c = this.#byte(path);
        const n = c >= 0xd4 ? FIXEXT_BYTES[c - 0xd4]! : c === 0xc7 ? this.#byte(path) : c === 0xc8 ? this.#u16(path) : this.#u32(path);
        this.#need(n + 1, path);
        this.pos += n + 1;
        return;
      }
    }
  }

  /**
   * Checks that `count` elements of at least `bytesEach` bytes can still follow, before anything is
   * sized by a count the payload claims.
   */
  fits(count: number, bytesEach: number, path: string): void {
    if (count * bytesEach > this.remaining)
      throw new KvDecodeError(path, `claims ${count} elements, the payload has ${this.remaining} bytes left`);
  }

  #set(hi: number, lo: number, signed: boolean): boolean {
    this.hi = hi >>> 0;
    this.lo = lo >>> 0;
    return signed;
  }

  #need(n: number, path: string): void {
    if (this.pos + n > this.#buf.length)
      throw new KvDecodeError(path, `truncated: ${n} more bytes needed at ${this.pos}, ${this.#buf.length - this.pos} left`);
  }

  #byte(path: string): number {
    this.#need(1, path);
    return this.#buf[this.pos++]!;
  }

  #u16(path: string): number {
    this.#need(2, path);
    const v = this.#view.getUint16(this.pos);
    this.pos += 2;
    return v;
  }

  #u32(path: string): number {
    this.#need(4, path);
    const v = this.#view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  #wrong(path: string, expected: string, c: number): KvDecodeError {
    this.pos--;
    return new KvDecodeError(path, `must be ${expected}, got msgpack byte 0x${c.toString(16)}`);
  }
}
