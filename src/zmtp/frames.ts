/**
 * ZMTP 3.1 on the wire (ZeroMQ RFC 37), the parts pdlink speaks: the 64-byte greeting with the NULL
 * mechanism, frames (short and long, MORE and COMMAND flags), and the READY, SUBSCRIBE, CANCEL and
 * ERROR commands. The decoder is incremental and bounded: a frame longer than the limit is not kept
 * but skipped as it streams past and reported, so a peer cannot make pdlink buffer more than the
 * limit (the message still arrives, that frame empty, with the bytes dropped said). Pure: bytes in,
 * frames out.
 */

export const GREETING_BYTES = 64;
const FLAG_MORE = 1;
const FLAG_LONG = 2;
const FLAG_COMMAND = 4;

/** A peer that does not speak the protocol pdlink expects. */
export class ZmtpError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ZmtpError';
  }
}

/**
 * Our greeting: signature, version 3.1, mechanism NULL, as-server false (NULL ignores it).
 * @example socket.write(greeting());
 */
export function greeting(): Uint8Array {
  const g = new Uint8Array(GREETING_BYTES);
  g[0] = 0xff;
  g[9] = 0x7f;
  g[10] = 3;
  g[11] = 1;
  g.set(new TextEncoder().encode('NULL'), 12);
  return g;
}

/** What a peer's greeting says. */
export interface PeerGreeting {
  readonly major: number;
  readonly minor: number;
  readonly mechanism: string;
}

/**
 * Reads a peer's 64-byte greeting.
 * @throws ZmtpError when it is not a ZMTP 3.x greeting offering the NULL mechanism.
 */
export function parseGreeting(bytes: Uint8Array): PeerGreeting {
  if (bytes[0] !== 0xff || bytes[9] !== 0x7f) throw new ZmtpError('not a ZMTP peer (bad greeting signature)');
  const major = bytes[10]!;
  const minor = bytes[11]!;
  if (major < 3) throw new ZmtpError(`ZMTP ${major}.${minor} is not supported (3.0 or later needed)`);
  let end = 12;
  while (end < 32 && bytes[end] !== 0) end++;
  const mechanism = new TextDecoder().decode(bytes.subarray(12, end));
  if (mechanism !== 'NULL') throw new ZmtpError(`security mechanism ${mechanism} is not supported (NULL only)`);
  return { major, minor, mechanism };
}

/**
 * One frame's bytes: flags, size, body.
 * @example socket.write(encodeFrame(body, true, false));
 */
export function encodeFrame(body: Uint8Array, more: boolean, command: boolean): Uint8Array {
  const long = body.length > 255;
  const head = long ? 9 : 2;
  const out = new Uint8Array(head + body.length);
  out[0] = (more ? FLAG_MORE : 0) | (long ? FLAG_LONG : 0) | (command ? FLAG_COMMAND : 0);
  if (long) new DataView(out.buffer).setBigUint64(1, BigInt(body.length));
  else out[1] = body.length;
  out.set(body, head);
  return out;
}

/**
 * A command frame's body: the name, then its data.
 * @example encodeFrame(commandBody('SUBSCRIBE', topic), false, true)
 */
export function commandBody(name: string, data: Uint8Array): Uint8Array {
  const n = new TextEncoder().encode(name);
  const out = new Uint8Array(1 + n.length + data.length);
  out[0] = n.length;
  out.set(n, 1);
  out.set(data, 1 + n.length);
  return out;
}

/**
 * The READY command's metadata: name-length, name, 4-byte value length, value, per property.
 * @example readyBody({ 'Socket-Type': 'SUB' })
 */
export function readyBody(properties: Readonly<Record<string, string>>): Uint8Array {
  const enc = new TextEncoder();
  const parts: number[] = [];
  for (const [name, value] of Object.entries(properties)) {
    const n = enc.encode(name);
    const v = enc.encode(value);
    parts.push(n.length, ...n, (v.length >>> 24) & 0xff, (v.length >>> 16) & 0xff, (v.length >>> 8) & 0xff, v.length & 0xff, ...v);
  }
  return commandBody('READY', Uint8Array.from(parts));
}

/** A decoded command: its name and data. */
export interface Command {
  readonly name: string;
  readonly data: Uint8Array;
}

/**
 * Splits a command frame's body.
 * @throws ZmtpError when the name runs past the body.
 */
export function parseCommand(body: Uint8Array): Command {
  const n = body[0] ?? 0;
  if (body.length < 1 + n) throw new ZmtpError('command name runs past its frame');
  return { name: new TextDecoder().decode(body.subarray(1, 1 + n)), data: body.subarray(1 + n) };
}

/**
 * The properties of a READY command's data.
 * @throws ZmtpError when a property runs past the data.
 */
export function parseProperties(data: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  const dec = new TextDecoder();
  let i = 0;
  while (i < data.length) {
    const n = data[i]!;
    if (i + 1 + n + 4 > data.length) throw new ZmtpError('READY property runs past its command');
    const name = dec.decode(data.subarray(i + 1, i + 1 + n));
    i += 1 + n;
    const len = ((data[i]! << 24) | (data[i + 1]! << 16) | (data[i + 2]! << 8) | data[i + 3]!) >>> 0;
    i += 4;
    if (i + len > data.length) throw new ZmtpError(`READY property ${name} runs past its command`);
    out[name] = dec.decode(data.subarray(i, i + len));
    i += len;
  }
  return out;
}

/** What the frame decoder hands on. */
export interface FrameSink {
  /**
   * A whole message (its frames, in order); `dropped` bytes of frames over the limit were not kept
   * (each such frame is empty here), so a message's other frames (a sequence number) still count.
   */
  message(frames: Uint8Array[], dropped: number): void;
  command(command: Command): void;
}

/**
 * Cuts a byte stream into frames and messages, keeping at most `maxFrameBytes` of any frame.
 * @example const decoder = new FrameDecoder(sink, 16 << 20); socket.on('data', (chunk) => decoder.push(chunk));
 */
export class FrameDecoder {
  readonly #sink: FrameSink;
  readonly #max: number;
  #pending: Uint8Array = new Uint8Array(0);
  #frames: Uint8Array[] = [];
  /** Bytes of an oversize frame still to skip; its size, and whether the message goes on after it. */
  #skipping = 0;
  #skippedSize = 0;
  #skippedMore = false;
  #droppedBytes = 0;
  /** Bytes of the message kept so far: no message keeps more than the limit, however it is cut. */
  #messageBytes = 0;

  constructor(sink: FrameSink, maxFrameBytes: number) {
    this.#sink = sink;
    this.#max = maxFrameBytes;
  }

  /** Feeds received bytes. @throws ZmtpError on a malformed frame header. */
  push(chunk: Uint8Array): void {
    let buf = chunk;
    if (this.#skipping > 0) {
      const n = Math.min(this.#skipping, buf.length);
      this.#skipping -= n;
      buf = buf.subarray(n);
      if (this.#skipping > 0) return;
      this.#endFrame(undefined, this.#skippedMore, this.#skippedSize);
    }
    if (this.#pending.length > 0) {
      const joined = new Uint8Array(this.#pending.length + buf.length);
      joined.set(this.#pending);
      joined.set(buf, this.#pending.length);
      buf = joined;
    }
    let i = 0;
    while (i < buf.length) {
      const flags = buf[i]!;
      if ((flags & ~(FLAG_MORE | FLAG_LONG | FLAG_COMMAND)) !== 0) throw new ZmtpError(`bad frame flags 0x${flags.toString(16)}`);
      const long = (flags & FLAG_LONG) !== 0;
      const head = long ? 9 : 2;
      if (i + head > buf.length) break;
      let size: number;
      if (long) {
        const hi = ((buf[i + 1]! << 24) | (buf[i + 2]! << 16) | (buf[i + 3]! << 8) | buf[i + 4]!) >>> 0;
        const lo = ((buf[i + 5]! << 24) | (buf[i + 6]! << 16) | (buf[i + 7]! << 8) | buf[i + 8]!) >>> 0;
        if (hi > 0x1fffff) throw new ZmtpError('frame size beyond 2^53 bytes');
        size = hi * 4294967296 + lo;
      } else size = buf[i + 1]!;
      const more = (flags & FLAG_MORE) !== 0;
      const command = (flags & FLAG_COMMAND) !== 0;
      if (size > this.#max && !command) {
        // Skip it as it streams past: keep nothing of it.
        const have = buf.length - (i + head);
        if (have >= size) {
          i += head + size;
          this.#endFrame(undefined, more, size);
          continue;
        }
        this.#skipping = size - have;
        this.#skippedSize = size;
        this.#skippedMore = more;
        this.#pending = new Uint8Array(0);
        return;
      }
      if (command && size > this.#max) throw new ZmtpError(`command of ${size} bytes over the ${this.#max}-byte limit`);
      if (i + head + size > buf.length) break;
      const body = buf.slice(i + head, i + head + size);
      i += head + size;
      if (command) this.#sink.command(parseCommand(body));
      else this.#endFrame(body, more, size);
    }
    this.#pending = i < buf.length ? buf.slice(i) : new Uint8Array(0);
  }

  #endFrame(body: Uint8Array | undefined, more: boolean, size: number): void {
    if (body === undefined || this.#messageBytes + size > this.#max) {
      this.#droppedBytes += size;
      this.#frames.push(EMPTY);
    } else {
      this.#messageBytes += size;
      this.#frames.push(body);
    }
    if (more) return;
    const frames = this.#frames;
    const dropped = this.#droppedBytes;
    this.#frames = [];
    this.#messageBytes = 0;
    this.#droppedBytes = 0;
    this.#sink.message(frames, dropped);
  }
}

const EMPTY = new Uint8Array(0);
