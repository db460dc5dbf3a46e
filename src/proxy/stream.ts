/**
 * Relays D's streamed answer to the client as it arrives, and ends it cleanly when D fails: the
 * client gets one SSE error event instead of a silently truncated stream.
 *
 * For SSE, bytes are forwarded up to the last complete event: a client parser dispatches nothing
 * before an event's blank line anyway, and holding back a torn tail means an error event never
 * lands inside a half-written one. Everything D sent is forwarded when the stream ends normally.
 */
import type { PdlinkError } from '../core/errors.ts';
import type { BodySink } from '../runtime/runtime.ts';
import { sseErrorEvent } from './errors.ts';

/** A torn SSE tail larger than this is forwarded as it is rather than held. */
export const MAX_HELD_BYTES = 1 << 20;

/** The reader side of a body: fetch's body reader, or the socket client's answer (runtime.ts's BodyReader). */
export interface ChunkReader {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
  cancel(reason?: unknown): Promise<void>;
  /** Hands the chunks over as they arrive (the socket client's reader: BodyReader.sinkTo in runtime.ts). */
  sinkTo?(sink: BodySink): void;
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
  let held: Uint8Array | null = null;
  let finished = false;

  /** Enqueues what can go now; false when everything was held back. */
  const forward = (controller: ReadableStreamDefaultController<Uint8Array>, chunk: Uint8Array): boolean => {
    if (!sse) {
      controller.enqueue(chunk);
      return true;
    }
    const data = held === null ? chunk : concat(held, chunk);
    const end = data.byteLength > MAX_HELD_BYTES ? data.byteLength : lastEventEnd(data);
    held = end === data.byteLength ? null : data.slice(end);
    if (end > 0) controller.enqueue(end === data.byteLength ? data : data.subarray(0, end));
    return end > 0;
  };

  /** D failed: the error event (a torn tail dropped: it replaces the event D never finished), then the close. */
  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, error: unknown): void => {
    finished = true;
    const event = handlers.onError(error);
    if (event !== null) controller.enqueue(sseErrorEvent(event));
    controller.close();
  };
  /** D ended: what was held goes too. */
  const end = (controller: ReadableStreamDefaultController<Uint8Array>): void => {
    finished = true;
    if (held !== null) controller.enqueue(held);
    held = null;
    controller.close();
    handlers.onEnd();
  };
  const cancel = (reason: unknown): void => {
    if (finished) return;
    finished = true;
    reader.cancel(reason).catch(() => {});
    handlers.onCancel(reason);
  };

  const sinkTo = reader.sinkTo;
  if (sinkTo !== undefined) {
    // The chunks are handed over as they arrive and go straight to the client's stream: no read,
    // no promise and no pull per chunk. The client's stream holds what it has not sent yet, as the
    // reader's queue would have. The sink is called from the socket's data handler, which must not
    // see the relay's own failures: one ends the client's stream as a failed pull would.
    return new ReadableStream<Uint8Array>({
      start(controller) {
        const broke = (error: unknown): void => {
          finished = true;
          try {
            controller.error(error);
          } catch {
            // Already closed: nothing more can go to the client.
          }
        };
        forward(controller, first);
        sinkTo.call(reader, {
          chunk(bytes) {
            if (finished) return;
            try {
              forward(controller, bytes);
            } catch (error) {
              broke(error);
            }
          },
          end() {
            if (finished) return;
            try {
              end(controller);
            } catch (error) {
              broke(error);
            }
          },
          fail(error) {
            if (finished) return;
            try {
              fail(controller, error);
            } catch (thrown) {
              broke(thrown);
            }
          },
        });
      },
      cancel,
    });
  }

  return new ReadableStream<Uint8Array>({
    start(controller) {
      forward(controller, first);
    },
    async pull(controller) {
      // A pull that enqueues nothing is not called again, so read until something goes out.
      for (;;) {
        if (finished) return;
        let result: Awaited<ReturnType<ChunkReader['read']>>;
        try {
          result = await reader.read();
        } catch (error) {
          if (!finished) fail(controller, error);
          return;
        }
        if (finished) return;
        if (result.done) return end(controller);
        if (forward(controller, result.value)) return;
      }
    },
    cancel,
  });
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

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}
