/**
 * What the socket client (h1-client.ts) hands the proxy of an answer besides its status: its
 * header fields, read as a `Headers` reads them, and its body, whose chunks wait in a queue until
 * read. No `Response` and no JS stream per leg: those were a tenth of the proxy's JS thread.
 */
import { TURN_BYTES } from '../core/turns.ts';
import type { BodyReader, BodySink, BodyWatch } from './platform.ts';

type ReadResult = Awaited<ReturnType<BodyReader['read']>>;
const DONE: ReadResult = Object.freeze({ done: true });

/** An answer's header fields (names in lower case), read as a `Headers` reads them. */
export class AnswerHeaders implements Pick<Headers, 'get'> {
  readonly #pairs: readonly [string, string][];

  constructor(pairs: readonly [string, string][]) {
    this.#pairs = pairs;
  }

  get(name: string): string | null {
    const key = name.toLowerCase();
    let found: string | null = null;
    for (const [field, value] of this.#pairs) if (field === key) found = found === null ? value : `${found}, ${value}`;
    return found;
  }
}

/** No header fields (an answer before its head). */
export const NO_HEADERS = new AnswerHeaders([]);

/** Bytes a body queues for a reader that has not taken them before its connection stops reading. */
export const QUEUE_HIGH_BYTES = 1 << 20;

/** Why the connection is not read: any reason holds it. */
const SINK_BEHIND = 1;
const QUEUE_FULL = 2;
const YIELDING = 4;
const EVERY_HOLD = SINK_BEHIND | QUEUE_FULL | YIELDING;

/**
 * A body as it arrives: chunks are pushed, then its end or its failure; a reader takes them in order.
 * A watch (the proxy's idle clock) is told of each chunk as it arrives and of the end. Reading from
 * the connection is held (see `hold`) while the reader is behind (past QUEUE_HIGH_BYTES queued, or
 * when a sink asks for a pause), and for one turn of the event loop after every TURN_BYTES: an
 * engine that writes as fast as the client reads would otherwise be read for as long as the socket
 * has data (measured: 5.5 MiB in 11 reads in one turn, up to 60 ms) while every other request and
 * probe waits.
 */
export class BodyQueue implements BodyReader {
  /** Chunks not read yet (from #next on), then the end or the failure. */
  #queue: Uint8Array[] = [];
  #next = 0;
  #queuedBytes = 0;
  #ended = false;
  #failure: { readonly error: unknown } | undefined;
  #waiting: { resolve: (result: ReadResult) => void; reject: (err: unknown) => void } | undefined;
  #watch: BodyWatch | undefined;
  #sink: BodySink | undefined;
  /** The reasons the connection is held (SINK_BEHIND, QUEUE_FULL, YIELDING): held while any is set. */
  #holds = 0;
  /** Bytes taken since the connection last gave the event loop a turn. */
  #sinceTurn = 0;

  /** Stops (true) or resumes (false) reading from the connection; the socket client's answer does it. */
  protected hold(_on: boolean): void {}

  #setHeld(reason: number, on: boolean): void {
    const before = this.#holds;
    this.#holds = on ? before | reason : before & ~reason;
    if ((before === 0) === (this.#holds === 0)) return;
    this.#watch?.held(this.#holds !== 0);
    this.hold(this.#holds !== 0);
  }

  /** A chunk arrived. */
  protected push(bytes: Uint8Array): void {
    this.#watch?.touch();
    this.#sinceTurn += bytes.byteLength;
    if (this.#sinceTurn >= TURN_BYTES && (this.#holds & YIELDING) === 0) {
      this.#setHeld(YIELDING, true);
      setImmediate(() => {
        this.#sinceTurn = 0;
        this.#setHeld(YIELDING, false);
      });
    }
    if (this.#sink !== undefined) return this.#sink.chunk(bytes);
    const waiting = this.#waiting;
    if (waiting === undefined) {
      this.#queue.push(bytes);
      this.#queuedBytes += bytes.byteLength;
      if (this.#queuedBytes > QUEUE_HIGH_BYTES) this.#setHeld(QUEUE_FULL, true);
    } else {
      this.#waiting = undefined;
      waiting.resolve({ done: false, value: bytes });
    }
  }

  /** The sink is behind: stop reading until `resume`. */
  pause(): void {
    if (!this.#ended && this.#failure === undefined) this.#setHeld(SINK_BEHIND, true);
  }

  resume(): void {
    this.#setHeld(SINK_BEHIND, false);
  }

  /** The body ended: reads end once the chunks are taken. */
  protected ended(): void {
    this.#ended = true;
    this.#setHeld(EVERY_HOLD, false);
    this.#watch?.stop();
    const sink = this.#sink;
    if (sink === undefined) return this.#settleWaiting(DONE);
    this.#sink = undefined;
    sink.end();
  }

  /** The body failed: as a stream that errors, what was not read is dropped and reads fail. */
  protected failed(err: unknown): void {
    this.#drop();
    this.#setHeld(EVERY_HOLD, false);
    const error = this.#watch === undefined ? err : this.#watch.failure(err);
    this.#failure = { error };
    const sink = this.#sink;
    if (sink !== undefined) {
      this.#sink = undefined;
      return sink.fail(error);
    }
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting.reject(error);
    }
  }

  /** The body's reader with `watch` told of its chunks (see LegAnswer.watched). */
  watched(watch: BodyWatch): BodyReader {
    this.#watch = watch;
    // What happened before the watch came: an end stops it, a failure becomes what it says.
    if (this.#failure !== undefined) this.#failure = { error: watch.failure(this.#failure.error) };
    else if (this.#ended) watch.stop();
    return this;
  }

  read(): Promise<ReadResult> {
    if (this.#next < this.#queue.length) {
      const value = this.#queue[this.#next++]!;
      if (this.#next === this.#queue.length) {
        this.#drop();
        // Everything queued was taken: the connection may be read again.
        if (this.#sink === undefined) this.#setHeld(QUEUE_FULL, false);
      }
      return Promise.resolve({ done: false, value });
    }
    if (this.#failure !== undefined) return Promise.reject(this.#failure.error);
    if (this.#ended) return Promise.resolve(DONE);
    return new Promise<ReadResult>((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  sinkTo(sink: BodySink): void {
    // What arrived before the sink came goes first, then the end or the failure if they came too.
    const queued = this.#queue;
    const next = this.#next;
    this.#drop();
    // The sink decides from now on whether the connection is read (it pauses when it is behind).
    this.#sink = sink;
    this.#setHeld(QUEUE_FULL | SINK_BEHIND, false);
    for (let i = next; i < queued.length; i++) if (this.#sink === sink) sink.chunk(queued[i]!);
    if (this.#sink !== sink) return;
    if (this.#failure !== undefined) {
      this.#sink = undefined;
      sink.fail(this.#failure.error);
    } else if (this.#ended) {
      this.#sink = undefined;
      sink.end();
    }
  }

  /** The reader gives up: what was not read is dropped, and reads end. */
  cancel(): Promise<void> {
    this.#sink = undefined;
    this.#setHeld(EVERY_HOLD, false);
    this.#watch?.stop();
    this.#drop();
    this.#ended = true;
    this.#settleWaiting(DONE);
    return Promise.resolve();
  }

  #drop(): void {
    this.#queue = [];
    this.#next = 0;
    this.#queuedBytes = 0;
  }

  #settleWaiting(result: ReadResult): void {
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting.resolve(result);
    }
  }
}
