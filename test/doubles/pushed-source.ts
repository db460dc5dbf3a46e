/**
 * A PushedSource (runtime.ts) for the runtime seams' tests: it records when it is started and
 * cancelled, and hands its output to the test.
 */
import type { BodyOut, PushedSource } from '../../src/platform/platform.ts';

export interface RecordingSource extends PushedSource {
  /** The output it was started with; undefined before. */
  readonly out: BodyOut | undefined;
  readonly starts: number;
  /** Resolves with the reason of the first cancel. */
  readonly cancelled: Promise<unknown>;
  /** Times the body said its reader caught up after a full write. */
  readonly drains: number;
}

/**
 * A source that writes `first` when started (nothing if empty), then waits for the test.
 * @example const source = recordingSource('data: 1\n\n'); const body = runtime.pushedBody(source);
 */
export function recordingSource(first = ''): RecordingSource {
  const cancel = Promise.withResolvers<unknown>();
  const state = {
    out: undefined as BodyOut | undefined,
    starts: 0,
    cancelled: cancel.promise,
    start(out: BodyOut) {
      state.starts++;
      state.out = out;
      if (first !== '') out.write(new TextEncoder().encode(first));
    },
    drains: 0,
    cancel(reason: unknown) {
      cancel.resolve(reason);
    },
    drained() {
      state.drains++;
    },
  };
  return state;
}
