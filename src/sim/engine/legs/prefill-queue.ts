/**
 * An engine's prefill compute, one prompt at a time in arrival order: prefill is compute-bound, so
 * a real engine's prefills queue behind each other, and that queue is what makes a loaded P slow
 * and a prefix-cache hit valuable beyond its own request. Decoding is not queued (timing.ts).
 */
import { pause } from './answer.ts';

export class PrefillQueue {
  #tail: Promise<unknown> = Promise.resolve();
  #waiting = 0;

  /** Prefills queued or running now. */
  get length(): number {
    return this.#waiting;
  }

  /**
   * Runs `ms` of prefill after every prefill queued before it; resolves false when `signal`
   * aborted first (a request that left while queued takes no time when its turn comes).
   * @example if (!(await engine.prefillQueue.run(ms, signal))) return aborted();
   */
  run(ms: number, signal: AbortSignal): Promise<boolean> {
    this.#waiting++;
    const turn = this.#tail.then(() => pause(ms, signal));
    this.#tail = turn;
    return turn.finally(() => {
      this.#waiting--;
    });
  }
}
