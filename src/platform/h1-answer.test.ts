import { describe, expect, test } from 'bun:test';
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
}

const sink = (): BodySink & { bytes: number } => {
  const state = { bytes: 0, chunk: (b: Uint8Array) => void (state.bytes += b.byteLength), end: () => {}, fail: () => {} };
  return state;
};

describe('BodyQueue: a reader that is behind holds the connection', () => {
  test('past QUEUE_HIGH_BYTES queued and unread, reading stops; once everything queued is taken, it goes on', async () => {
    const body = new RecordedBody();
    body.arrive(QUEUE_HIGH_BYTES);
    expect(body.holds).toEqual([]);
    body.arrive(1);
    expect(body.holds).toEqual([true]);
    body.arrive(1000);
    expect(body.holds).toEqual([true]);
    await body.read();
    await body.read();
    expect(body.holds).toEqual([true]);
    await body.read();
    expect(body.holds).toEqual([true, false]);
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

  test('what queued before a sink came is handed over, and the sink decides from then on', () => {
    const body = new RecordedBody();
    body.arrive(QUEUE_HIGH_BYTES + 1);
    expect(body.holds).toEqual([true]);
    const out = sink();
    body.sinkTo(out);
    expect(out.bytes).toBe(QUEUE_HIGH_BYTES + 1);
    expect(body.holds).toEqual([true, false]);
  });
});
