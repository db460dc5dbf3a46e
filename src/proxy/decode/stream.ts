/**
 * Relays D's streamed answer to the client as it arrives, and ends it cleanly when D fails: the
 * client gets one SSE error event instead of a silently truncated stream.
 *
 * For SSE, bytes are forwarded up to the last complete event: a client parser dispatches nothing
 * before an event's blank line anyway, and holding back a torn tail means an error event never
 * lands inside a half-written one. A stream that ends in the middle of an event (cut, though its
 * framing ended cleanly) is D's failure like any other: the torn tail is dropped and the error
 * event sent. A client that reads slower than D writes pauses the reading of D's connection (the
 * socket client's) until it catches up.
 */
import type { PdlinkError } from '../../core/errors.ts';
import { nextTurn, TURN_BYTES } from '../../core/turns.ts';
import { platform } from '../../platform/index.ts';
import type { BodyOut, BodySink, PushedSource } from '../../platform/platform.ts';
import { sseErrorEvent } from '../exchange/errors.ts';

/** A torn SSE tail larger than this is forwarded as it is rather than held. */
export const MAX_HELD_BYTES = 1 << 20;

/** The reader side of a body: fetch's body reader, or the socket client's answer (runtime.ts's BodyReader). */
export interface ChunkReader {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
  cancel(reason?: unknown): Promise<void>;
  /** Hands the chunks over as they arrive (the socket client's reader: BodyReader.sinkTo in runtime.ts). */
  sinkTo?(sink: BodySink): void;
  /** Stops and resumes reading from the engine (BodyReader.pause in runtime.ts). */
  pause?(): void;
  resume?(): void;
}

export interface RelayHandlers {
  /** D's stream ended normally and everything was handed to the client. */
  onEnd(): void;
  /** D's stream failed; returns the error to send as the last event, or null to just close. */
  onError(error: unknown): PdlinkError | null;
  /** The client went away. */
  onCancel(reason: unknown): void;
}

/**
 * A stream that starts with `first`, then relays `reader`, reporting how it ended.
 * @example new Response(relayStream(first, reader, handlers, true), { headers })
 */
export function relayStream(first: Uint8Array, reader: ChunkReader, handlers: RelayHandlers, sse: boolean): ReadableStream<Uint8Array> {
  // A reader that hands its chunks over as they arrive (the socket client's) feeds the client's
  // body straight from the socket: no read, no promise and no pull per chunk. The body (the
  // runtime's pushed body) holds what it has not sent yet, as the reader's queue would have.
  if (reader.sinkTo !== undefined) return platform.pushedBody(new HandedRelay(first, reader, handlers, sse));
  return new ReadableStream<Uint8Array>(new PulledRelay(first, reader, handlers, sse));
}

/**
 * What both relays share: the SSE holding, the end, the failure and the client's cancel. One
 * object per stream with its methods on the prototype (it is the stream's source), not a closure each.
 */
abstract class Relay {
  protected held: Uint8Array | null = null;
  protected finished = false;

  constructor(
    protected readonly first: Uint8Array,
    protected readonly reader: ChunkReader,
    protected readonly handlers: RelayHandlers,
    protected readonly sse: boolean,
  ) {}

  /** A chunk to the client's body. */
  protected abstract put(chunk: Uint8Array): void;
  /** Ends the client's body. */
  protected abstract shut(): void;

  /** Sends what can go now; false when everything was held back. */
  protected forward(chunk: Uint8Array): boolean {
    if (!this.sse) {
      this.put(chunk);
      return true;
    }
    const held = this.held;
    const data = held === null ? chunk : concat(held, chunk);
    const end = data.byteLength > MAX_HELD_BYTES ? data.byteLength : lastEventEnd(data);
    this.held = end === data.byteLength ? null : data.slice(end);
    if (end > 0) this.put(end === data.byteLength ? data : data.subarray(0, end));
    return end > 0;
  }

  /** D failed: the error event (a torn tail dropped: it replaces the event D never finished), then the close. */
  protected failWith(error: unknown): void {
    this.finished = true;
    const event = this.handlers.onError(error);
    if (event !== null) this.put(sseErrorEvent(event));
    this.shut();
  }

  /**
   * D ended: what was held goes too, then the end. The end is reported before the body is closed:
   * a failure to report it then fails the body (an ended body cannot fail afterwards). A held tail
   * with more than line ends in it is an event D never finished: the stream failed.
   */
  protected endAll(): void {
    const held = this.held;
    this.held = null;
    if (held !== null && !onlyLineEnds(held)) return this.failWith(new Error('the stream ended in the middle of an event'));
    this.finished = true;
    if (held !== null) this.put(held);
    this.handlers.onEnd();
    this.shut();
  }

  /** The client went away. */
  cancel(reason: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.reader.cancel(reason).catch(() => {});
    this.handlers.onCancel(reason);
  }
}

/**
 * Relays a body read chunk by chunk (fetch's): a pull reads until something goes out. After every
 * TURN_BYTES a pull ends a turn later: reads that find data waiting resolve one after another
 * without giving the event loop a turn, megabytes at a time.
 */
class PulledRelay extends Relay {
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #sinceTurn = 0;

  start(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.#controller = controller;
    this.forward(this.first);
  }

  protected put(chunk: Uint8Array): void {
    this.#controller.enqueue(chunk);
  }

  protected shut(): void {
    this.#controller.close();
  }

  async pull(): Promise<void> {
    // A pull that enqueues nothing is not called again, so read until something goes out.
    for (;;) {
      if (this.finished) return;
      let result: Awaited<ReturnType<ChunkReader['read']>>;
      try {
        result = await this.reader.read();
      } catch (error) {
        if (!this.finished) this.failWith(error);
        return;
      }
      if (this.finished) return;
      if (result.done) return this.endAll();
      this.#sinceTurn += result.value.byteLength;
      if (this.forward(result.value)) {
        if (this.#sinceTurn < TURN_BYTES) return;
        this.#sinceTurn = 0;
        return nextTurn();
      }
    }
  }
}

/**
 * Relays a body whose chunks are handed over as they arrive; it is the body's sink, and the source
 * of the client's pushed body. The sink is called from the socket's data handler, which must not
 * see the relay's own failures: one fails the client's body, as a failed pull would.
 */
class HandedRelay extends Relay implements BodySink, PushedSource {
  #out!: BodyOut;

  start(out: BodyOut): void {
    this.#out = out;
    this.forward(this.first);
    this.reader.sinkTo!(this);
  }

  protected put(chunk: Uint8Array): void {
    // The client reads slower than D writes: D's connection stops being read until it catches up,
    // so what waits for the client is bounded by its body's buffer, not by the length of D's answer.
    if (!this.#out.write(chunk) && !this.finished) this.reader.pause?.();
  }

  protected shut(): void {
    this.#out.close();
  }

  drained(): void {
    if (!this.finished) this.reader.resume?.();
  }

  chunk(bytes: Uint8Array): void {
    if (this.finished) return;
    try {
      this.forward(bytes);
    } catch (error) {
      this.#broke(error);
    }
  }

  end(): void {
    if (this.finished) return;
    try {
      this.endAll();
    } catch (error) {
      this.#broke(error);
    }
  }

  fail(error: unknown): void {
    if (this.finished) return;
    try {
      this.failWith(error);
    } catch (thrown) {
      this.#broke(thrown);
    }
  }

  #broke(error: unknown): void {
    this.finished = true;
    try {
      this.#out.error(error);
    } catch {
      // Already closed: nothing more can go to the client.
    }
  }
}

/**
 * Offset just past the last blank line (`\n\n` or `\r\n\r\n`) in `data`; 0 when there is none.
 * @example lastEventEnd(new TextEncoder().encode('data: 1\n\ndata: 2')) // 9
 */
export function lastEventEnd(data: Uint8Array): number {
  for (let i = data.byteLength - 1; i >= 1; i--) {
    if (data[i] !== 0x0a) continue;
    if (data[i - 1] === 0x0a) return i + 1;
    if (data[i - 1] === 0x0d && i >= 2 && data[i - 2] === 0x0a) return i + 1;
  }
  return 0;
}

function onlyLineEnds(data: Uint8Array): boolean {
  for (const byte of data) if (byte !== 0x0a && byte !== 0x0d) return false;
  return true;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}
