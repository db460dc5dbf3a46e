import { describe, expect, test } from 'bun:test';
import { nextTurn, TURN_BYTES } from '../core/turns.ts';
import { BodyQueue, QUEUE_HIGH_BYTES } from './h1-answer.ts';
import type { BodySink, BodyWatch } from './platform.ts';

/** A body whose arrivals the test makes, recording when it stops and resumes reading its connection. */
class RecordedBody extends BodyQueue {
  readonly holds: boolean[] = [];
  arrive(bytes: number): void {
    this.push(new Uint8Array(bytes));
  }
  end(): void {
    this.ended();
  }
  protected override hold(on: boolean): void {
    this.holds.push(on);
  }
  /** Whether the connection is held now. */
  get held(): boolean {
    return this.holds.at(-1) === true;
  }
}

const sink = (): BodySink & { bytes: number } => {
  const state = { bytes: 0, chunk: (b: Uint8Array) => void (state.bytes += b.byteLength), end: () => {}, fail: () => {} };
  return state;
};

describe('BodyQueue: a reader that is behind holds the connection', () => {
  test('past QUEUE_HIGH_BYTES queued and unread, reading stops; once everything queued is taken, it goes on', async () => {
    const body = new RecordedBody();
    body.arrive(QUEUE_HIGH_BYTES / 2);
    await nextTurn();
    body.arrive(QUEUE_HIGH_BYTES / 2);
    // (TURN_BYTES taken: a turn without reading, which is over by the next.)
    await nextTurn();
    expect(body.held).toBe(false);
    body.arrive(1);
    expect(body.held).toBe(true);
    body.arrive(1000);
    await nextTurn();
    expect(body.held).toBe(true);
    await body.read();
    await body.read();
    await body.read();
    expect(body.held).toBe(true);
    await body.read();
    expect(body.held).toBe(false);
  });

  test('after every TURN_BYTES taken the connection is left unread until the next turn, then read again', async () => {
    const body = new RecordedBody();
    body.sinkTo(sink());
    body.arrive(TURN_BYTES - 1);
    expect(body.holds).toEqual([]);
    body.arrive(1);
    expect(body.holds).toEqual([true]);
    await nextTurn();
    expect(body.holds).toEqual([true, false]);
    // A sink that is behind keeps it held past that turn; the count starts again.
    body.arrive(TURN_BYTES);
    body.pause();
    await nextTurn();
    expect(body.holds).toEqual([true, false, true]);
    body.resume();
    expect(body.holds).toEqual([true, false, true, false]);
    body.arrive(TURN_BYTES - 1);
    expect(body.holds).toEqual([true, false, true, false]);
  });

  test('a sink pauses and resumes it; a body that ends or is given up is never left held', () => {
    const body = new RecordedBody();
    const out = sink();
    body.sinkTo(out);
    body.arrive(10);
    body.pause();
    body.pause();
    body.resume();
    expect(body.holds).toEqual([true, false]);
    body.pause();
    body.end();
    expect(body.holds).toEqual([true, false, true, false]);
    body.pause();
    expect(body.holds).toEqual([true, false, true, false]);
    const other = new RecordedBody();
    other.sinkTo(sink());
    other.pause();
    void other.cancel();
    expect(other.holds).toEqual([true, false]);
  });

  test('a held body tells its watch, so the pause is not counted as the engine being silent', () => {
    const body = new RecordedBody();
    const told: boolean[] = [];
    const watch: BodyWatch = { touch: () => {}, stop: () => {}, failure: (err) => err, held: (on) => void told.push(on) };
    body.watched(watch);
    body.sinkTo(sink());
    body.pause();
    body.resume();
    expect(told).toEqual([true, false]);
  });

  test('what queued before a sink came is handed over, and the sink decides from then on', async () => {
    const body = new RecordedBody();
    for (let i = 0; i < 4; i++) {
      body.arrive(QUEUE_HIGH_BYTES / 4);
      await nextTurn();
    }
    body.arrive(1);
    expect(body.held).toBe(true);
    const out = sink();
    body.sinkTo(out);
    expect(out.bytes).toBe(QUEUE_HIGH_BYTES + 1);
    expect(body.held).toBe(false);
  });
});
