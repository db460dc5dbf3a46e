/**
 * Relays D's streamed answer to the client as it arrives, and ends it cleanly when D fails: the
 * client gets one SSE error event instead of a silently truncated stream.
 *
 * For SSE, bytes are forwarded up to the last complete event: a client parser dispatches nothing
 * before an event's blank line anyway, and holding back a torn tail means an error event never
 * lands inside a half-written one. Everything D sent is forwarded when the stream ends normally.
 */
import type { PdlinkError } from '../core/errors.ts';
import { sseErrorEvent } from './errors.ts';

/** A torn SSE tail larger than this is forwarded as it is rather than held. */
export const MAX_HELD_BYTES = 1 << 20;

/** The reader side of a body: fetch's body reader, or the socket client's answer (runtime.ts's BodyReader). */
export interface ChunkReader {
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>;
  cancel(reason?: unknown): Promise<void>;
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
          if (finished) return;
          finished = true;
          const event = handlers.onError(error);
          // A torn tail is dropped: the error event replaces the event D never finished.
          if (event !== null) controller.enqueue(sseErrorEvent(event));
          controller.close();
          return;
        }
        if (finished) return;
        if (result.done) {
          finished = true;
          if (held !== null) controller.enqueue(held);
          held = null;
          controller.close();
          handlers.onEnd();
          return;
        }
        if (forward(controller, result.value)) return;
      }
    },
    cancel(reason) {
      if (finished) return;
      finished = true;
      reader.cancel(reason).catch(() => {});
      handlers.onCancel(reason);
    },
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
