/**
 * `http_timeout_seconds`, as MindIE's Coordinator applies its HTTP timeout to each read on an
 * engine connection: a leg fails when the engine sends nothing for that long — no response head
 * after the request went out, or no next body chunk. It bounds a stalled engine, not a long
 * stream that keeps producing; but an engine that answers a non-streamed request only once it is
 * complete is silent until then, so for those the timeout also bounds the generation.
 *
 * The failure is a transport error (code ETIMEDOUT): the instance is reported, a P leg is retried
 * on another P, a D leg fails (D may already hold the KV blocks).
 *
 * The clock costs nothing per chunk: a chunk only notes the time, and the leg's one deadline on the
 * proxy's shared timer (deadlines.ts), when it comes, checks how long the engine has really been
 * silent and sets itself again for the rest. The answer's body is read where it arrives, with no
 * stream in between (an extra stream layer was a hop per chunk and a Response per leg): the socket
 * client's answers tell the clock of each chunk as it arrives (LegAnswer.watched), and for fetch's
 * the reader here does; either way the abort a silence caused becomes its error.
 */
import { AbortScope, offAbort, onAbort, type AbortParent } from './abort-scope.ts';
import { requestDeadlines, type Deadline, type Deadlines } from './deadlines.ts';
import type { ChunkReader } from '../decode/stream.ts';
import { abortSourceOf, type AbortSource, type BodySink, type LegAnswer } from '../../platform/platform.ts';
import { answerTooLarge } from './unusable-answer.ts';

/** Code of the error a silent engine's leg fails with. */
export const ENGINE_IDLE_CODE = 'ETIMEDOUT';

/**
 * The error of a leg whose engine stayed silent for `idleMs`.
 * @example engineIdleError(600_000).message
 */
export function engineIdleError(idleMs: number): Error {
  const seconds = idleMs / 1000;
  return Object.assign(new Error(`the engine sent nothing for ${seconds} s (http_timeout_seconds)`), { code: ENGINE_IDLE_CODE });
}

/** One leg's watch on its engine's silence: the leg's own abort, armed until the leg's answer is read. */
class LegClock {
  /** The leg's abort: a scope, so an AbortController is made only for a client that wants a signal (fetch). */
  readonly scope = new AbortScope();
  readonly #parent: AbortParent;
  readonly #idleMs: number;
  readonly #deadlines: Deadlines;
  #last: number;
  #deadline: Deadline | undefined;
  #stopped = false;
  /** Reading is paused (the client is behind): the engine is not silent, it is not being read. */
  #held = false;
  /** Set once the engine's silence ended the leg. */
  idle: Error | undefined;
  readonly #onParentAbort = (): void => {
    // The caller's abort ends the leg; the engine's silence no longer matters.
    this.stop();
    this.scope.abort(this.#parent.reason);
  };
  readonly #check = (): void => {
    this.#deadline = undefined;
    if (this.#stopped) return;
    const quiet = this.#held ? 0 : this.#deadlines.now() - this.#last;
    if (quiet < this.#idleMs) {
      this.#deadline = this.#deadlines.arm(this.#idleMs - quiet, this.#check);
      return;
    }
    this.idle = engineIdleError(this.#idleMs);
    this.stop();
    this.scope.abort(this.idle);
  };

  constructor(parent: AbortParent, idleMs: number, deadlines: Deadlines) {
    this.#parent = parent;
    this.#idleMs = idleMs;
    this.#deadlines = deadlines;
    this.#last = deadlines.now();
    this.#deadline = deadlines.arm(idleMs, this.#check);
    if (parent.aborted) this.#onParentAbort();
    else onAbort(parent, this.#onParentAbort);
  }

  /** The engine sent something: its silence starts again. */
  touch(): void {
    this.#last = this.#deadlines.now();
  }

  /** Reading paused (true) or resumed (false): a pause is never the engine's silence. */
  held(on: boolean): void {
    this.#held = on;
    if (!on) this.touch();
  }

  /** The leg's answer is read (or failed): nothing stays armed. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#deadlines.cancel(this.#deadline);
    this.#deadline = undefined;
    offAbort(this.#parent, this.#onParentAbort);
  }

  /** What a failed read or send of this leg failed with: the silence, when it caused the abort. */
  failure(err: unknown): unknown {
    this.stop();
    return this.idle ?? err;
  }
}

/**
 * The clock of each answer sent under an idle timeout. An answer cannot carry it, and wrapping its
 * body in a stream of ours to carry it cost a stream hop per chunk.
 */
const clocks = new WeakMap<LegAnswer, LegClock>();

/**
 * Sends a request with `send` under an idle timeout: the send fails with engineIdleError when no
 * head comes within `idleMs`, and the body read through legReader, readLegText or readLegBytes
 * fails with it once `idleMs` pass without a chunk (the body must be read through them, which
 * also disarm the clock). `signal` still aborts everything. `send` is given the leg's abort (see
 * AbortSource in runtime.ts); with `idleMs` Infinity, that is `signal` itself.
 * @example const res = await withIdleTimeout((a) => fetch(url, { signal: a.signal }).then(answerOf), signal, 600_000);
 */
export async function withIdleTimeout(
  send: (abort: AbortSource) => Promise<LegAnswer>,
  signal: AbortParent,
  idleMs: number,
  deadlines: Deadlines = requestDeadlines,
): Promise<LegAnswer> {
  if (!Number.isFinite(idleMs)) return send(signal instanceof AbortScope ? signal : abortSourceOf(signal));
  const clock = new LegClock(signal, idleMs, deadlines);
  let res: LegAnswer;
  try {
    res = await send(clock.scope);
  } catch (err) {
    throw clock.failure(err);
  }
  if (!res.hasBody) {
    clock.stop();
    return res;
  }
  clock.touch();
  clocks.set(res, clock);
  return res;
}

type ReadResult = Awaited<ReturnType<ChunkReader['read']>>;
const DONE: ReadResult = Object.freeze({ done: true });

/** A body reader that tells its leg's clock of every chunk. */
class ClockedReader implements ChunkReader {
  readonly #reader: ChunkReader;
  readonly #clock: LegClock;

  constructor(reader: ChunkReader, clock: LegClock) {
    this.#reader = reader;
    this.#clock = clock;
  }

  // Handlers made once per reader and chained with then(): an async read per chunk was a second
  // promise and a generator resumption for every chunk of every stream.
  readonly #onResult = (result: ReadResult): ReadResult => {
    if (result.done) {
      this.#clock.stop();
      return DONE;
    }
    this.#clock.touch();
    return result;
  };
  readonly #onError = (err: unknown): never => {
    throw this.#clock.failure(err);
  };

  read(): Promise<ReadResult> {
    return this.#reader.read().then(this.#onResult, this.#onError);
  }

  cancel(reason?: unknown): Promise<void> {
    this.#clock.stop();
    return this.#reader.cancel(reason);
  }
}

/**
 * The reader of a leg's body, under its idle clock when it has one; undefined for no body.
 * @example const reader = legReader(res); const { value } = await reader!.read();
 */
export function legReader(res: LegAnswer): ChunkReader | undefined {
  if (!res.hasBody) return undefined;
  const clock = clocks.get(res);
  // An answer that sees its chunks arrive tells the clock itself: no reader in between.
  if (clock !== undefined && res.watched !== undefined) return res.watched(clock);
  const reader: ChunkReader = res.reader();
  return clock === undefined ? reader : new ClockedReader(reader, clock);
}

/**
 * A leg's whole body, under its idle clock, failing with answerTooLarge (and the connection
 * closed) as soon as it passes `limit` bytes: an engine's answer never grows this process's
 * memory beyond the bound, however long or endless it is.
 * @example const bytes = await readLegBytes(res, settings.maxAnswerBytes);
 */
export function readLegBytes(res: LegAnswer, limit: number): Promise<Uint8Array> {
  try {
    const reader = legReader(res);
    if (reader === undefined) return Promise.resolve(new Uint8Array(0));
    // The socket client's reader hands the chunks over as they arrive: one promise for the body.
    if (reader.sinkTo !== undefined) return wholeOf(reader, limit);
    return readAll(reader, limit);
  } catch (err) {
    return Promise.reject(err);
  }
}

function wholeOf(reader: ChunkReader, limit: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const parts: Uint8Array[] = [];
    let length = 0;
    let over = false;
    reader.sinkTo!({
      chunk: (bytes) => {
        if (over) return;
        length += bytes.byteLength;
        if (length <= limit) {
          parts.push(bytes);
          return;
        }
        over = true;
        parts.length = 0;
        reader.cancel().catch(() => {});
        reject(answerTooLarge(limit));
      },
      end: () => {
        if (!over) resolve(joined(parts));
      },
      fail: (err) => {
        if (!over) reject(err);
      },
    } satisfies BodySink);
  });
}

async function readAll(reader: ChunkReader, limit: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return joined(parts);
    length += value.byteLength;
    if (length > limit) {
      parts.length = 0;
      await reader.cancel().catch(() => {});
      throw answerTooLarge(limit);
    }
    parts.push(value);
  }
}

const decoder = new TextDecoder();
const decoded = (bytes: Uint8Array): string => decoder.decode(bytes);

/**
 * A leg's whole body as text, under its idle clock and bounded as readLegBytes bounds it.
 * @example const text = await readLegText(res, settings.maxAnswerBytes);
 */
export function readLegText(res: LegAnswer, limit: number): Promise<string> {
  return readLegBytes(res, limit).then(decoded);
}

function joined(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let length = 0;
  for (const part of parts) length += part.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
